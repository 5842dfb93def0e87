package planner

import (
	"bytes"
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// firstBootWarning says when the pool's nodes run configs whose first-boot part (users,
// disks, filesystems… that only Ignition at a machine's first boot does) is not target's:
// (each node's: its pool's or its variant) no step can give it to them, so only machines that boot from now on get it. "" when
// every node has target's, or the config each runs is unknown to the state.
func firstBootWarning(in Input, pool string, nodes []*model.Node) string {
	stale, removed := 0, false
	for _, n := range nodes {
		target := in.targetOf(pool, n.Name)
		if target == nil {
			continue
		}
		cur := known(in, n.CurrentConfig, target)
		if cur != nil && !bytes.Equal(cur.FirstBoot, target.FirstBoot) {
			stale++
			removed = removed || len(target.FirstBoot) == 0
		}
	}
	if stale == 0 {
		return ""
	}
	what := "changes"
	if removed {
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
