package model

import (
	"strconv"
	"strings"
	"time"
)

// HealthCheck is one health_check block of a pool: a check each of the pool's nodes must
// pass after its steps, before it counts as done and its slot frees.
type HealthCheck struct {
	Name string `json:"name"`
	// HTTPGet is a URL that must answer 2xx. NodeNameVar and NodeAddressVar in it stand for
	// the node's name and address (URLFor).
	HTTPGet string `json:"http_get,omitempty"`
	// Command is an argv (no shell; Command[0] an absolute path) that must exit 0, run on
	// the node: by its agent on Kubernetes, in the node's root directory on the local
	// fleet. Exactly one of HTTPGet and Command is set.
	Command []string `json:"command,omitempty"`
	// Timeout bounds the check: it is retried until it passes or Timeout has passed.
	Timeout   time.Duration `json:"timeout"`
	DeclRange Range         `json:"-"`
}

// The placeholders of HealthCheck.HTTPGet: HCL's own interpolation of the block's node
// object (node.name, node.address) leaves them in the URL, to be filled in per node.
const (
	NodeNameVar    = "${node.name}"
	NodeAddressVar = "${node.address}"
)

// DefaultHealthCheckTimeout is a health_check's timeout when the block gives none.
const DefaultHealthCheckTimeout = 5 * time.Minute

// MaxCommandCheckTimeout bounds a command check's timeout, and so one run of its command
// on a node.
const MaxCommandCheckTimeout = 24 * time.Hour

// URLFor is HTTPGet for one node.
func (h HealthCheck) URLFor(name, address string) string {
	return strings.NewReplacer(NodeNameVar, name, NodeAddressVar, address).Replace(h.HTTPGet)
}

// NeedsAddress says whether the URL has the node's address in it.
func (h HealthCheck) NeedsAddress() bool { return strings.Contains(h.HTTPGet, NodeAddressVar) }

// CheckOutputLimit bounds the output of a failed check kept for its error: the first bytes
// of an HTTP answer's body, of a command's combined output.
const CheckOutputLimit = 512

// CheckResult is what one run of a command check did.
type CheckResult struct {
	// ExitCode is the command's exit status; -1 when it did not exit on its own (it did not
	// start, was killed at its timeout or by a signal, or was not run at all).
	ExitCode int `json:"exit_code"`
	// Output is the first CheckOutputLimit bytes of its standard output and error, combined.
	Output string `json:"output,omitempty"`
	// Error says why the command did not run or did not exit on its own; "" when it exited.
	Error string `json:"error,omitempty"`
}

// Passed says whether the command ran and exited 0.
func (r CheckResult) Passed() bool { return r.Error == "" && r.ExitCode == 0 }

// String describes the result for an error: "exit 3: OUTPUT", or why it did not run.
func (r CheckResult) String() string {
	var s string
	switch {
	case r.Error != "":
		s = r.Error
	default:
		s = "exit " + strconv.Itoa(r.ExitCode)
	}
	if out := strings.TrimSpace(r.Output); out != "" {
		s += ": " + out
	}
	return s
}
