package benchdoc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpfleet/mcp/planner"
)

// PlanEstimates reads the pools' estimates from the output of `mcp plan -json`, by pool
// (a pool the plan starts no node of has none), and the longest pool's duration: the
// apply's, as the pools roll out side by side.
func PlanEstimates(planJSON []byte) (map[string]*planner.Estimate, time.Duration, error) {
	var pj struct {
		MCP struct {
			Pools []planner.PoolPlan `json:"pools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(planJSON, &pj); err != nil {
		return nil, 0, fmt.Errorf("mcp plan -json: %w", err)
	}
	out := map[string]*planner.Estimate{}
	var longest time.Duration
	for _, pp := range pj.MCP.Pools {
		if pp.Estimate != nil {
			out[pp.Name] = pp.Estimate
			longest = max(longest, pp.Estimate.Duration)
		}
	}
	return out, longest, nil
}
