# Reboot limits for mcp plans, over the plan JSON (`mcp show -json PLANFILE`).
#
# A plan may reboot at most N nodes of any one pool. N is data, not code:
#   data.mcp_policy.max_reboots_per_pool        every pool (default 2)
#   data.mcp_policy.max_reboots_by_pool[POOL]   one pool, over the above
# e.g. a data file {"mcp_policy": {"max_reboots_per_pool": 5, "max_reboots_by_pool": {"infra": 1}}}.
#
#   opa eval --fail-defined -d policy/ -i plan.json 'data.mcp.reboots.deny[msg]'
#   conftest test --policy policy/ --namespace mcp.reboots plan.json
package mcp.reboots

default max_reboots_per_pool := 2

max_reboots_per_pool := data.mcp_policy.max_reboots_per_pool

limit(pool) := n if {
	n := data.mcp_policy.max_reboots_by_pool[pool]
} else := max_reboots_per_pool

# [pool, node] for each node the plan reboots in this apply: a deferred node (paused pool,
# no budget left) is not started by it.
rebooting contains [rc.mcp.pool, rc.name] if {
	some rc in input.resource_changes
	rc.type == "mcp_node"
	rc.mcp.reboot
	not rc.mcp.deferred
}

# How many nodes of each pool the plan reboots, and which.
reboots[pool] := sort(nodes) if {
	some [pool, _] in rebooting
	nodes := [node | some [pool, node] in rebooting]
}

deny contains msg if {
	some pool, nodes in reboots
	count(nodes) > limit(pool)
	msg := sprintf("pool %s: the plan reboots %d nodes (%s), more than the %d allowed", [pool, count(nodes), concat(", ", nodes), limit(pool)])
}
