package butane

import (
	"fmt"
	"strings"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/ignition"
)

// FromIgnitionJSON reads an Ignition config (any spec the ignition room parses) that a
// caller made from another text, as FromIgnition does: MachineConfigs carry such a config in
// spec.config. Problems name their place in the config by its JSON path alone
// ("storage.files.0: …"), which the caller maps back to its own text: Ignition's line and
// column are of raw, not of that text, so they are left out.
func FromIgnitionJSON(raw []byte, firstBootOnly func(path string) bool) (*Result, []Problem) {
	cfg, rpt, err := ignition.ParseAny(raw)
	var problems []Problem
	for _, e := range rpt.Entries {
		if e.Kind != report.Error && e.Kind != report.Warn {
			continue
		}
		msg := e.Message
		if e.Context.Len() > 0 {
			msg = strings.TrimPrefix(e.Context.String(), "$.") + ": " + msg
		}
		problems = append(problems, Problem{Warning: e.Kind == report.Warn, Message: msg})
	}
	if err != nil {
		if !rpt.IsFatal() {
			problems = append(problems, Problem{Message: fmt.Sprintf("the Ignition config cannot be read: %v", err)})
		}
		return nil, problems
	}
	return split(&cfg, problems, firstBootOnly)
}
