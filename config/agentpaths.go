package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/ignition/content"
)

// checkAgentPath refuses a path in the node agent's own directory: the agent keeps its
// records there (pending.json, current.json, firstboot.json …) and rewrites them on every
// update, so a config's file there would be lost, or would break the agent's resume. It is
// called beside checkPath, which says which trees are managed at all. It reads the path as
// written; what reaches the records through links (which may come from other configs of
// the pool) is the planner's to refuse, once the pool's configs are merged (planner's
// recordsDiags).
func checkAgentPath(p string, r hcl.Range) *hcl.Diagnostic {
	if p != content.AgentStateDir && !strings.HasPrefix(p, content.AgentStateDir+"/") {
		return nil
	}
	return errAt(r, "Path of mcp's own records",
		fmt.Sprintf("File path %q is in %s, where the node agent keeps its own records (the pending update, the config the node runs, the first-boot record): a config may not write there.", p, content.AgentStateDir))
}
