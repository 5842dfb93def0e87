package model

import (
	"strings"
	"time"
)

// HealthCheck is one health_check block of a pool: a check each of the pool's nodes must
// pass after its steps, before it counts as done and its slot frees.
type HealthCheck struct {
	Name string `json:"name"`
	// HTTPGet is a URL that must answer 2xx. NodeNameVar and NodeAddressVar in it stand for
	// the node's name and address (URLFor).
	HTTPGet string `json:"http_get"`
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

// URLFor is HTTPGet for one node.
func (h HealthCheck) URLFor(name, address string) string {
	return strings.NewReplacer(NodeNameVar, name, NodeAddressVar, address).Replace(h.HTTPGet)
}

// NeedsAddress says whether the URL has the node's address in it.
func (h HealthCheck) NeedsAddress() bool { return strings.Contains(h.HTTPGet, NodeAddressVar) }
