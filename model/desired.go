package model

import (
	"fmt"
	"time"
)

// Desired is everything the configuration files declare.
type Desired struct {
	Provider ProviderConfig
	State    StateConfig
	// IgnitionVersion is the Ignition spec the rendered configs are written in ("3.4.0").
	IgnitionVersion string
	Pools           []Pool   // sorted by name
	Configs         []Config // sorted by name (the merge order)
	// Dir is the directory the configuration was loaded from; relative paths in
	// provider and state blocks are relative to it.
	Dir string
}

// Pool returns the pool named name, or nil.
func (d *Desired) Pool(name string) *Pool {
	for i := range d.Pools {
		if d.Pools[i].Name == name {
			return &d.Pools[i]
		}
	}
	return nil
}

// ProviderConfig is the provider block: its type label and its attributes.
type ProviderConfig struct {
	Type      string            // "local" or "kubernetes"
	Attrs     map[string]string // e.g. fleet = "./fleet" (already resolved against Desired.Dir)
	DeclRange Range
}

// StateConfig is the state block.
type StateConfig struct {
	Backend   string // "local" (default)
	Path      string // local backend: state file path (default "mcp.state", resolved against Desired.Dir)
	Attrs     map[string]string
	DeclRange Range
}

// BackendName is the state backend the block names; without one, "local".
func (c StateConfig) BackendName() string {
	if c.Backend == "" {
		return "local"
	}
	return c.Backend
}

// Pool is a named group of nodes that share one rendered config.
type Pool struct {
	Name           string
	NodeSelector   map[string]string
	MaxUnavailable IntOrPercent
	Paused         bool
	OSImage        string
	KernelArgs     []string
	BootImage      BootImage
	// DrainTimeout bounds each drain of the pool's nodes; zero: apply's -drain-timeout.
	DrainTimeout time.Duration
	// HealthChecks are the pool's health_check blocks, in the order declared.
	HealthChecks []HealthCheck
	// KernelArgsRange is the pool's kernel_args attribute.
	KernelArgsRange Range
	DeclRange       Range
}

// BootImage is a pool's boot-image policy.
type BootImage struct {
	Policy string // "managed" (default) or "pinned"
	Image  string // for pinned
}

// IntOrPercent is max_unavailable: an absolute count or a percentage of the pool.
type IntOrPercent struct {
	Value   int
	Percent bool
}

// Resolve returns the number of nodes for a pool of size n: percentages round down,
// and the result is at least 1 (the MCO's rule).
func (v IntOrPercent) Resolve(n int) int {
	r := v.Value
	if v.Percent {
		r = n * v.Value / 100
	}
	if r < 1 {
		r = 1
	}
	return r
}

func (v IntOrPercent) String() string {
	if v.Percent {
		return fmt.Sprintf("%d%%", v.Value)
	}
	return fmt.Sprint(v.Value)
}

// Config is one config block: files, units, kernel arguments and an OS image for some pools.
type Config struct {
	Name       string
	Pools      []string
	Files      []File
	Units      []Unit
	KernelArgs []string
	// KernelArgSources says where each of KernelArgs was declared (same length; absent
	// in configs built by hand, which then count as declared at DeclRange).
	KernelArgSources []Source
	OSImage          string
	DeclRange        Range
}
