#!/usr/bin/env bash
# make demo: copy the quickstart, then validate, plan, apply, and roll out a change of the
# NTP server — an in-place restart, no drain, no reboot — on the embedded local fleet.
set -euo pipefail
MCP=${MCP:-$PWD/bin/mcp}
demo=$PWD/.demo/quickstart
rm -rf "$demo"; mkdir -p "$(dirname "$demo")"
cp -r examples/quickstart "$demo"
cd "$demo"
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

say "mcp validate"
"$MCP" validate
say "mcp fleet list   (6 nodes, nothing managed yet)"
"$MCP" fleet list
say "mcp plan -out=first.plan"
set +e; "$MCP" plan -out=first.plan -detailed-exitcode; rc=$?; set -e
[ "$rc" = 2 ] || { echo "expected exit 2 (changes), got $rc"; exit 1; }
say "mcp apply first.plan"
"$MCP" apply first.plan
say "mcp plan -detailed-exitcode   (the fleet matches: exit 0)"
"$MCP" plan -detailed-exitcode
say "a new NTP server: mcp plan -var ntp_server=ntp.internal"
"$MCP" plan -var ntp_server=ntp.internal -out=ntp.plan
say "mcp apply ntp.plan"
"$MCP" apply ntp.plan
say "what a node now holds"
echo "--- fleet/nodes/worker-0/root/etc/chrony.conf"
cat fleet/nodes/worker-0/root/etc/chrony.conf
echo "--- fleet/nodes/worker-0/host.log (unit operations the node's executor did)"
tail -n 3 fleet/nodes/worker-0/host.log
"$MCP" fleet list
say "done: the demo's copy is in $demo"
