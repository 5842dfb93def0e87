#!/usr/bin/env bash
# make ci-example: what examples/ci's jobs run, on a copy of the quickstart — plan -out,
# show -json, show -markdown (the comment, with its diffs), then the Rego policy with opa —
# after a change of the NTP server, so that the comment shows a diff.
set -euo pipefail
MCP=${MCP:-$PWD/bin/mcp}
OPA=${OPA:-$PWD/bin/opa}
dir=$PWD/.demo/ci
rm -rf "$dir"; mkdir -p "$(dirname "$dir")"
cp -r examples/quickstart "$dir"
"$MCP" -chdir="$dir" apply -auto-approve -no-color >/dev/null
"$MCP" -chdir="$dir" plan -no-color -out="$dir/mcp.plan" -var ntp_server=ntp.internal >/dev/null
"$MCP" -chdir="$dir" show -json "$dir/mcp.plan" > "$dir/plan.json"
"$MCP" -chdir="$dir" show -markdown "$dir/mcp.plan" > "$dir/plan.md"
status=0
"$OPA" eval --fail-defined --format pretty -d examples/ci/policy/reboots.rego -i "$dir/plan.json" 'data.mcp.reboots.deny[msg]' > "$dir/policy.txt" || status=$?
if [ "$status" -ne 0 ]; then printf '\n**Policy: refused**\n\n```\n%s\n```\n' "$(cat "$dir/policy.txt")" >> "$dir/plan.md"; else printf '\n**Policy: passed**\n' >> "$dir/plan.md"; fi
cat "$dir/plan.md"
echo
echo "The comment is $dir/plan.md; the plan JSON $dir/plan.json."
exit "$status"
