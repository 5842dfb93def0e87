package model

import "time"

// Cluster is a cluster block: one cluster of a fleet of clusters, which the configuration's
// pools, configs and boot images reach with its own provider, state and variable values
// (docs/fleets.md). The provider and state are read when the cluster is loaded
// (config.Options.Cluster), against that cluster's variables.
type Cluster struct {
	Name  string
	Stage string
	// ProviderType is the label of the cluster's provider block.
	ProviderType string
	// Values are the places of the cluster's own variable values (its `variables`
	// attribute), by variable name: the overrides that make this cluster differ.
	Values map[string]Range
	// Labels are the cluster block's labels (region, rack…): the failure domains it is in.
	Labels    map[string]string
	DeclRange Range // the cluster block's label
}

// FailureDomain is a failure_domain block: of the clusters whose Label has one value, at
// most MaxDisrupting whose plan disrupts nodes (drains or reboots) apply at once.
type FailureDomain struct {
	Label         string `json:"label"`
	MaxDisrupting int    `json:"max_disrupting"`
	DeclRange     Range  `json:"-"`
}

// StageWaves are the waves of clusters a stage's concurrency and the failure domains make
// (package clusters, Waves).
type StageWaves struct {
	Stage string `json:"stage"`
	Waves []Wave `json:"waves"`
}

// Wave is clusters that start together; Held are those a full failure domain kept out of
// it, each with the domain ("region=eu").
type Wave struct {
	Clusters []string          `json:"clusters"`
	Held     map[string]string `json:"held,omitempty"`
}

// Stage is a stage block: a step of the promotion from cluster to cluster.
type Stage struct {
	Name string
	// After are the stages that come before this one (a DAG: stages with no path between
	// them are in no order).
	After []string
	// Soak is how long the stage's clusters are to run a change before a later stage takes
	// it: a later stage's plan and apply refuse what has not (package clusters, Gate);
	// apply across clusters stops after a stage that soaks and changed (docs/fleets.md).
	Soak time.Duration
	// MaxFailedClusters is how many of the stage's clusters may fail before promotion
	// stops: 0 (the default) stops it at the first failure; with more, the stage's other
	// clusters go on, and the next stage starts only when at most this many failed.
	MaxFailedClusters int
	// Approval stops promotion before this stage until an apply names it
	// (-approve-stage): the approval is that run's, for the content it planned.
	Approval bool
	// Concurrency is how many of the stage's clusters apply at once (1 or more; 0 read
	// as 1).
	Concurrency int
	DeclRange   Range
}
