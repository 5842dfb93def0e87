#!/usr/bin/env bash
# make demo: copy the quickstart, then validate, plan, apply, and roll out a change of the
# NTP server — an in-place restart, no drain, no reboot — on the embedded local fleet, with
# the boot server following the rollout; then prune what nothing uses any more.
set -euo pipefail
MCP=${MCP:-$PWD/bin/mcp}
demo=$PWD/.demo/quickstart
rm -rf "$demo"; mkdir -p "$(dirname "$demo")"
cp -r examples/quickstart "$demo"
cd "$demo"
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# get PATH ACCEPT: an HTTP GET to the boot server (bash's /dev/tcp: nothing to install),
# printing the status line, the headers that matter and the start of the body.
get() {
  exec 3<>"/dev/tcp/$host/$port"
  printf 'GET %s HTTP/1.1\r\nHost: %s\r\nAccept: %s\r\nConnection: close\r\n\r\n' "$1" "$host" "$2" >&3
  local resp; resp=$(tr -d '\r' <&3); exec 3<&-
  printf '%s\n' "$resp" | sed -n '1p; /^Content-Type:/p; /^ETag:/p'
  printf '%s\n' "$resp" | sed '1,/^$/d' | head -c 240; echo
}
ign36='application/vnd.coreos.ignition+json;version=3.6.0, */*;q=0.1'

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

say "mcp serve: the boot server, following the state"
"$MCP" serve -listen 127.0.0.1:0 2>serve.log &
serve=$!
trap 'kill $serve 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q '"msg":"serving"' serve.log 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's/.*"url":"http:\/\/\([^"]*\)".*/\1/p' serve.log | head -1)
host=${addr%:*} port=${addr##*:}
echo "--- GET /config/worker as an Ignition 3.6 client"
get /config/worker "$ign36"
etag=$(get /config/worker "$ign36" | sed -n 's/^ETag: //p')
echo "--- GET /config/infra as a client that reads only spec 3.0 (infra sets kernel arguments)"
get /config/infra 'application/vnd.coreos.ignition+json;version=3.0.0'
echo "--- mcp pointer worker: the user-data that makes a new worker boot from this server"
"$MCP" pointer worker -url "http://$addr"
say "a new NTP server: mcp plan -var ntp_server=ntp.internal"
"$MCP" plan -var ntp_server=ntp.internal -out=ntp.plan
say "mcp apply ntp.plan"
"$MCP" apply ntp.plan
say "the boot server follows: /config/worker has a new ETag, with no restart"
for _ in $(seq 30); do
  [ "$(get /config/worker "$ign36" | sed -n 's/^ETag: //p')" != "$etag" ] && break; sleep 0.1
done
get /config/worker "$ign36" | sed -n '1,3p'
[ "$(get /config/worker "$ign36" | sed -n 's/^ETag: //p')" != "$etag" ] || { echo "the boot server still serves the old config"; exit 1; }
say "mcp prune -var ntp_server=ntp.internal   (the first rollout's configs: nothing uses them)"
"$MCP" prune -var ntp_server=ntp.internal
say "what a node now holds"
echo "--- fleet/nodes/worker-0/root/etc/chrony.conf"
cat fleet/nodes/worker-0/root/etc/chrony.conf
echo "--- fleet/nodes/worker-0/host.log (unit operations the node's executor did)"
tail -n 3 fleet/nodes/worker-0/host.log
"$MCP" fleet list
say "done: the demo's copy is in $demo"
