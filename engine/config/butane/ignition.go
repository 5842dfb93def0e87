package butane

import (
	"fmt"
	"strings"

	"github.com/coreos/vcontext/report"

	"github.com/mcpfleet/mcp/ignition"
)

// FromIgnition reads an Ignition config (any spec the ignition room parses) into what mcp
// manages, exactly as the config a Butane text translates to is read: the same files,
// units and kernel arguments, and the same refusals for the rest. MachineConfigs carry
// such a config in spec.config. Problems name their place in the config by its JSON path
// ("storage.files.0"); Ignition's own line and column are of raw, not of any text a
// caller made raw from, so they are left out.
func FromIgnition(raw []byte) (*Result, []Problem) {
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
	res, errs := fromIgnition(&cfg)
	for _, e := range errs {
		problems = append(problems, Problem{Message: e})
	}
	if len(errs) > 0 {
		return nil, problems
	}
	return res, problems
}
