// Package planfile reads and writes saved plans (`mcp plan -out=FILE`). A saved plan carries
// what it was made from — the state's lineage and serial and a fingerprint of the observed
// fleet — so that apply can refuse it once the world has moved on, as Terraform's planfile
// does.
package planfile

import (
	"github.com/mcpfleet/mcp/internal/atomicfile"

	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/mcpfleet/mcp/engine/state"
	"github.com/mcpfleet/mcp/planner"
	"github.com/mcpfleet/mcp/planner/model"
)

// FormatVersion is the saved plan format; a different one is refused.
const FormatVersion = 1

// File is a saved plan.
type File struct {
	FormatVersion int       `json:"format_version"`
	MCPVersion    string    `json:"mcp_version"`
	Created       time.Time `json:"created"`
	// ConfigDir is the configuration directory the plan was made in (absolute).
	ConfigDir string `json:"config_dir"`
	// Lineage and Serial identify the state the plan was made from.
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// FleetFingerprint is a digest of the observed fleet the plan was made from.
	FleetFingerprint string        `json:"fleet_fingerprint"`
	Plan             *planner.Plan `json:"plan"`
	// Refresh is what the refresh before the plan observed and cost (display only).
	Refresh *model.RefreshStats `json:"refresh,omitempty"`
}

// Write saves f at path atomically.
func Write(path string, f *File) error {
	f.FormatVersion = FormatVersion
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding plan: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("writing plan %q: %w", path, err)
	}
	return nil
}

// Read loads a saved plan.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading plan %q: %w", path, err)
	}
	f := new(File)
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("loading plan %q: not a saved mcp plan: %w", path, err)
	}
	if f.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("loading plan %q: format version %d, this mcp reads %d", path, f.FormatVersion, FormatVersion)
	}
	if f.Plan == nil {
		return nil, fmt.Errorf("loading plan %q: no plan in it", path)
	}
	return f, nil
}

// CheckFresh refuses a plan made from another state or fleet than the current ones.
func (f *File) CheckFresh(s *state.State, fingerprint string) error {
	if f.Lineage != "" && s.Lineage != "" && f.Lineage != s.Lineage {
		return fmt.Errorf("saved plan is for another state (lineage %s, the state's is %s); run mcp plan again", f.Lineage, s.Lineage)
	}
	if f.Serial != s.Serial {
		return fmt.Errorf("saved plan is stale: it was made from state serial %d, the state is now at serial %d; run mcp plan again", f.Serial, s.Serial)
	}
	if f.FleetFingerprint != fingerprint {
		return fmt.Errorf("saved plan is stale: the fleet changed since it was made (fingerprint %s, now %s); run mcp plan again", short(f.FleetFingerprint), short(fingerprint))
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
