// Package fleetlock is the server side of the FleetLock protocol that Zincati (Fedora
// CoreOS's updater) speaks before and after each reboot
// (https://coreos.github.io/zincati/development/fleetlock/protocol): POST /v1/pre-reboot
// takes a reboot slot (RecursiveLock), POST /v1/steady-state gives it back
// (UnlockIfHeld). This package reads and answers the requests; a Locker decides, from the
// pool budgets and node claims mcp apply uses (docs/boot-server.md, "FleetLock").
package fleetlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
)

// Params are a request's client_params: the client's id (Zincati: the machine's
// machine-id) and its reboot group (Zincati: "default" unless configured).
type Params struct {
	ID    string `json:"id"`
	Group string `json:"group"`
}

// Locker takes and gives back reboot slots.
type Locker interface {
	// Lock takes a reboot slot for p, or keeps the one p holds (recursive: one slot
	// however often p locks). A refusal the client should read is an *Error.
	Lock(ctx context.Context, p Params) error
	// Unlock gives back p's slot if p holds one; holding none is success.
	Unlock(ctx context.Context, p Params) error
}

// Error is a refusal as the protocol returns it: Status the HTTP status (4xx or 5xx), Kind
// an identifier from a small fixed set (Zincati counts it in metrics), Value for people.
type Error struct {
	Status int    `json:"-"`
	Kind   string `json:"kind"`
	Value  string `json:"value"`
}

func (e *Error) Error() string { return e.Value }

// The kinds of error this server returns.
const (
	KindMethod      = "method_not_allowed"
	KindNotFound    = "not_found"
	KindHeader      = "missing_fleet_lock_header"
	KindBody        = "invalid_body"
	KindParams      = "invalid_client_params"
	KindSemaphore   = "failed_lock_semaphore_full" // the protocol's own example
	KindUnknownNode = "unknown_client"
	KindGroup       = "group_mismatch"
	KindInternal    = "internal_error"
	KindClaimed     = "failed_lock_node_claimed"
	KindApply       = "failed_lock_apply_running"
)

// groupRE is the protocol's rule for a group.
var groupRE = regexp.MustCompile(`^[a-zA-Z0-9.-]+$`)

// maxBody bounds a request body: the protocol's is two short strings.
const maxBody = 64 << 10

// Handler answers the protocol's two endpoints (and refuses everything else under /v1/),
// logging each decision to log.
func Handler(l Locker, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var op func(context.Context, Params) error
		switch r.URL.Path {
		case "/v1/pre-reboot":
			op = l.Lock
		case "/v1/steady-state":
			op = l.Unlock
		default:
			reply(w, &Error{http.StatusNotFound, KindNotFound, fmt.Sprintf("no FleetLock endpoint %s: there are /v1/pre-reboot and /v1/steady-state", r.URL.Path)})
			return
		}
		p, err := read(w, r)
		if err == nil {
			err = op(r.Context(), p)
		}
		log.Info("fleetlock", "op", r.URL.Path, "id", p.ID, "group", p.Group, "ok", err == nil, "error", errText(err))
		reply(w, err)
	})
}

// read checks the method, the header and the body, and returns the client's params.
func read(w http.ResponseWriter, r *http.Request) (Params, error) {
	var p Params
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return p, &Error{http.StatusMethodNotAllowed, KindMethod, fmt.Sprintf("%s %s: FleetLock requests are POST", r.Method, r.URL.Path)}
	}
	if r.Header.Get("fleet-lock-protocol") != "true" {
		return p, &Error{http.StatusBadRequest, KindHeader, `the request has no header "fleet-lock-protocol: true"`}
	}
	var body struct {
		ClientParams *Params `json:"client_params"`
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(b, &body)
	}
	if err != nil {
		return p, &Error{http.StatusBadRequest, KindBody, fmt.Sprintf("reading the request body: %v", err)}
	}
	switch {
	case body.ClientParams == nil:
		return p, &Error{http.StatusBadRequest, KindParams, "the body has no client_params"}
	case body.ClientParams.ID == "":
		return *body.ClientParams, &Error{http.StatusBadRequest, KindParams, "client_params.id is empty"}
	case !groupRE.MatchString(body.ClientParams.Group):
		return *body.ClientParams, &Error{http.StatusBadRequest, KindParams,
			fmt.Sprintf("client_params.group %q does not match ^[a-zA-Z0-9.-]+$", body.ClientParams.Group)}
	}
	return *body.ClientParams, nil
}

// reply writes 200 for nil, else err as the protocol's error object (an error that is not
// an *Error: 500, internal_error).
func reply(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err == nil {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("{}\n"))
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{http.StatusInternalServerError, KindInternal, err.Error()}
	}
	b, _ := json.Marshal(e)
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
