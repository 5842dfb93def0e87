package model

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Claim names the apply that works on a node. It is recorded on the node itself (a local
// node's node.json, a Node's mcpfleet.io/claim annotation), taken before the node's first
// step and checked in the same write, so that two applies never work on one node at once,
// with the state lock or without it. When the apply is done with the node the claim stays
// as a record, Released; whether an unreleased claim's apply still runs is judged from
// what it names (docs/decisions.md, "One apply per node").
type Claim struct {
	// Apply names one run of mcp apply.
	Apply string `json:"apply"`
	// Lock is the state lock ID the apply holds ("" with -lock=false).
	Lock string `json:"lock,omitempty"`
	// State is the lineage of the state the apply works with: Lock is a lock of that state,
	// and only an apply of that state can tell whether Lock is still held ("": a claim of
	// an mcp that did not record it, taken for one of the judging apply's state).
	State string `json:"state,omitempty"`
	// Host is user@host of the apply, for people.
	Host string `json:"host,omitempty"`
	// Process is the apply's process: its machine, boot and PID namespace, PID and start
	// time; only from the same machine, boot and namespace does PID name that process.
	Process
	Since time.Time `json:"since"`
	// Expires bounds the claim for whoever can check neither its process nor the state
	// lock it was taken under (another machine without the lock, or an apply of another
	// state): its apply renews it while it works on the node. Nobody takes it for later
	// than a lease can run from when they saw it (LeaseEnd).
	Expires time.Time `json:"expires,omitzero"`
	// Released is when the apply was done with the node: the claim is a record from then on.
	Released time.Time `json:"released,omitzero"`
	// Failed says why the apply failed the node ("" when it did not), set when it released
	// it: a drain refused, a step that failed, a health gate. For people (mcp status
	// -nodes), at most MaxFailed bytes; nothing decides on it.
	Failed string `json:"failed,omitempty"`
	// Intent is what the apply does to the node, written before each action (nil: a claim
	// of an mcp that wrote none). Runs after it read it to know what was in flight.
	Intent *Intent `json:"intent,omitempty"`
}

// ErrClaimChanged is the refusal of a claim swap (providers.Claimer's Clear, mcp serve
// -fleetlock's SwapClaim) whose claim is no longer the one judged.
var ErrClaimChanged = errors.New("the node's claim changed since it was read")

// MaxFailed bounds a claim's Failed: a claim is a small record on the node.
const MaxFailed = 1024

// FailedWords is err's text as a claim's Failed keeps it: at most MaxFailed bytes.
func FailedWords(err error) string {
	s := err.Error()
	if len(s) > MaxFailed {
		cut := MaxFailed - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Held reports whether the claim is not released.
func (c *Claim) Held() bool { return c != nil && c.Apply != "" && c.Released.IsZero() }

// Same reports whether a and b are one claim in one state (nil for none).
func (a *Claim) Same(b *Claim) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Apply == b.Apply && a.Lock == b.Lock && a.State == b.State && a.Host == b.Host && a.Process == b.Process &&
		a.Since.Equal(b.Since) && a.Expires.Equal(b.Expires) &&
		a.Released.Equal(b.Released) && a.Failed == b.Failed && a.Intent.Same(b.Intent)
}

// LeaseEnd is until when the claim counts as live for whoever judges it by its expiry: its
// Expires, but no later than lease after seen, when the judge first saw it with that
// expiry. An apply asks for at most lease at a time (renewing it as it works), so an
// expiry farther ahead — a clock far off, a hand edit, 2099 — is not believed; capped
// says so. An apply's renewal writes a new expiry, which is seen anew.
func (c *Claim) LeaseEnd(seen time.Time, lease time.Duration) (end time.Time, capped bool) {
	limit := seen.Add(lease)
	if c.Expires.IsZero() || c.Expires.After(limit) {
		return limit, true
	}
	return c.Expires, false
}

// FleetLockPrefix begins the Apply of a claim that a FleetLock client (Zincati) holds
// through mcp serve -fleetlock: "fleetlock:" and the client's id. Such a claim has no
// process or lock: it lives until its Expires, the reboot slot's lease
// (docs/decisions.md, "One budget with the OS's own updater").
const FleetLockPrefix = "fleetlock:"

// MaxFleetLockLease bounds a FleetLock claim's lease: no expiry further than that from when
// a judge first saw it is believed (LeaseEnd).
const MaxFleetLockLease = 24 * time.Hour

// KuredPrefix begins the Apply of a claim read from kured's reboot lock (an annotation of
// kured's DaemonSet, read by the kubernetes provider): "kured:" and the node's name. It
// is never written on a node: the provider lays it over the node's own claim while kured
// holds the node (Node.OwnClaim keeps that one), Host names the DaemonSet, Since is when
// kured took the lock and Expires when its TTL ends (zero: no TTL, held until kured
// releases it) (docs/decisions.md, "kured's lock is a claim").
const KuredPrefix = "kured:"

// Updater is who holds a claim: an mcp apply, or an OS updater mcp shares the pool's
// budget with. An updater's claim takes a slot of max_unavailable like an apply's, but
// its node reboots for its own updater, which changes nothing mcp planned: apply waits
// for it rather than skipping the node, and it is left out of the fleet's fingerprint.
type Updater string

const (
	// UpdaterMCP: an mcp apply's claim.
	UpdaterMCP Updater = ""
	// UpdaterFleetLock: a reboot slot mcp serve -fleetlock granted a FleetLock client (Zincati).
	UpdaterFleetLock Updater = "fleetlock"
	// UpdaterKured: kured's reboot lock on its DaemonSet.
	UpdaterKured Updater = "kured"
)

// Updater is who holds the claim, with the holder's id for an OS updater (a FleetLock
// client's id, the node kured's lock names); UpdaterMCP for an apply's claim or none.
func (c *Claim) Updater() (Updater, string) {
	switch {
	case c == nil:
		return UpdaterMCP, ""
	case strings.HasPrefix(c.Apply, FleetLockPrefix):
		return UpdaterFleetLock, strings.TrimPrefix(c.Apply, FleetLockPrefix)
	case strings.HasPrefix(c.Apply, KuredPrefix):
		return UpdaterKured, strings.TrimPrefix(c.Apply, KuredPrefix)
	}
	return UpdaterMCP, ""
}

// ByUpdater reports whether the claim is an OS updater's, not an mcp apply's.
func (c *Claim) ByUpdater() bool {
	u, _ := c.Updater()
	return u != UpdaterMCP
}

// FleetLockID is the FleetLock client id that holds the claim, ok false for any other's.
func (c *Claim) FleetLockID() (id string, ok bool) {
	u, id := c.Updater()
	return id, u == UpdaterFleetLock
}

// Holder names who holds the claim, briefly: "apply 3KQ…", "FleetLock client c988…" or
// "kured (lock on DaemonSet kube-system/kured)".
func (c *Claim) Holder() string {
	switch u, id := c.Updater(); u {
	case UpdaterFleetLock:
		return "FleetLock client " + id
	case UpdaterKured:
		return "kured (lock on " + c.Host + ")"
	}
	return "apply " + c.Apply
}

// Until says, for people, what ends an updater's claim ("" for an apply's).
func (c *Claim) Until() string {
	switch u, _ := c.Updater(); u {
	case UpdaterFleetLock:
		return "until it reports steady state"
	case UpdaterKured:
		if c.Expires.IsZero() {
			return "until kured releases it (the lock has no TTL)"
		}
		return "until kured releases it or its TTL ends at " + c.Expires.Local().Format("15:04:05")
	}
	return ""
}

// String names the claim's apply for people: "apply 3KQ… (pid 4242 on root@build-1, since 10:58:06)",
// "FleetLock client c988… (since 10:58:06)" or "kured (lock on DaemonSet kube-system/kured, since 10:58:06)".
func (c *Claim) String() string {
	since := c.Since.Local().Format("15:04:05")
	switch u, id := c.Updater(); u {
	case UpdaterFleetLock:
		return fmt.Sprintf("FleetLock client %s (since %s)", id, since)
	case UpdaterKured:
		return fmt.Sprintf("kured (lock on %s, since %s)", c.Host, since)
	}
	return fmt.Sprintf("apply %s (pid %d on %s, since %s)", c.Apply, c.PID, c.Host, since)
}

// KuredLive judges a claim read from kured's lock at now, as kured judges its own lock:
// live until its TTL ends (Expires), and a lock without a TTL until kured releases it —
// the lock is read afresh with the nodes, so a released one is simply gone. kured may
// also end a lock without a TTL by its own --lock-ttl, which mcp cannot see: counting it
// until it is gone errs on the side of the budget. why says how it was judged, for people.
func (c *Claim) KuredLive(now time.Time) (live bool, why string) {
	switch {
	case c.Expires.IsZero():
		return true, "kured's lock has no TTL: held until kured releases it"
	case now.Before(c.Expires):
		return true, "kured's lock is held until its TTL ends at " + c.Expires.Local().Format(time.RFC3339)
	}
	return false, "kured's lock lapsed: its TTL ended at " + c.Expires.Local().Format(time.RFC3339)
}
