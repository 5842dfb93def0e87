#!/usr/bin/env bash
# make demo-fleet: examples/fleet without a cluster — three local fleets (canary, staging,
# prod) in a temporary directory, planned across clusters, then applied stage by stage:
# apply stops after canary for its soak, canary's status says where its config ran, and
# -ignore-soak goes on, on purpose, one stage per run (docs/fleets.md).
set -euo pipefail
MCP=${MCP:-$PWD/bin/mcp}
demo=$(mktemp -d "${TMPDIR:-/tmp}/mcp-demo-fleet.XXXXXX")
cp -r examples/fleet/. "$demo"
cd "$demo"
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
# expect CODE CMD…: run CMD, failing the demo unless it exits CODE.
expect() {
  local want=$1 rc=0; shift
  "$@" || rc=$?
  [ "$rc" = "$want" ] || { echo "expected exit $want from ${*:2}, got $rc"; exit 1; }
}

say "mcp fleet init: a local fleet of two workers per cluster"
for c in canary staging prod; do "$MCP" fleet init -nodes worker=2 "clusters/$c/fleet"; done
say "mcp plan   (every cluster; staging and prod wait for their soak)"
"$MCP" plan
say "mcp apply -auto-approve   (canary, then a stop for canary's 1h soak: exit 2)"
expect 2 "$MCP" apply -auto-approve
say "mcp plan -cluster staging   (refused until canary has soaked: exit 1)"
expect 1 "$MCP" plan -cluster staging
say "mcp status -cluster canary   (where its config ran, for how long)"
"$MCP" status -cluster canary
say "mcp apply -auto-approve -ignore-soak   (staging, on purpose; then a stop for staging's 4h soak: exit 2)"
expect 2 "$MCP" apply -auto-approve -ignore-soak
say "mcp apply -auto-approve -ignore-soak   (prod)"
"$MCP" apply -auto-approve -ignore-soak
say "mcp plan -detailed-exitcode   (every cluster matches: exit 0)"
"$MCP" plan -detailed-exitcode >/dev/null && echo "no changes in any cluster"
say "what the nodes hold: each cluster's values"
for c in canary staging prod; do
  printf -- '--- %s: /etc/motd: %s; /etc/chrony.conf: %s\n' "$c" \
    "$(cat "clusters/$c/fleet/nodes/worker-0/root/etc/motd")" \
    "$(head -1 "clusters/$c/fleet/nodes/worker-0/root/etc/chrony.conf")"
done
say "done: the demo's copy is in $demo"
