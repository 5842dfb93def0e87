package model

import "time"

// RefreshStats says what a refresh observed and what it cost. It is for people and
// benchmarks; nothing decides on it.
type RefreshStats struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	PDBs  int `json:"pdbs"`
	// APIRequests is the number of API requests the refresh made (-1: the provider does not
	// talk to an API server).
	APIRequests int64         `json:"api_requests"`
	Duration    time.Duration `json:"duration_ns"`
	// Observed counts the nodes asked what they carry of their pool's target (adoption:
	// their current config absent or unknown), and ObserveRequests the API requests that
	// cost (not among APIRequests): a one-time cost of taking over a fleet.
	Observed        int   `json:"observed,omitempty"`
	ObserveRequests int64 `json:"observe_api_requests,omitempty"`
}
