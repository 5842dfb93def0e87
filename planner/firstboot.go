package planner

import (
	"bytes"
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// firstBootWarning says when the pool's nodes run configs whose first-boot part (users,
// disks, filesystems… that only Ignition at a machine's first boot does) is not target's:
// no step can give it to them, so only machines that boot from now on get it. "" when
// every node has target's, or the config each runs is unknown to the state.
func firstBootWarning(in Input, target *model.Rendered, nodes []*model.Node) string {
	stale := 0
	for _, n := range nodes {
		cur := in.Known[n.CurrentConfig]
		if cur == nil && in.Rendered[target.Pool] != nil && in.Rendered[target.Pool].Name == n.CurrentConfig {
			cur = in.Rendered[target.Pool]
		}
		if cur != nil && !bytes.Equal(cur.FirstBoot, target.FirstBoot) {
			stale++
		}
	}
	if stale == 0 {
		return ""
	}
	what := "changes"
	if len(target.FirstBoot) == 0 {
		what = "is removed from the config"
	}
	return fmt.Sprintf("the first-boot part of the config (users, groups, disks, filesystems… that Ignition does only at a machine's first boot) %s: "+
		"machines that boot from now on get it, but it cannot reach the %s running; they keep what they booted with until they are replaced",
		what, nodesWord(stale))
}

func nodesWord(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
