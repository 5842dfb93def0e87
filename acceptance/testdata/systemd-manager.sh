#!/usr/bin/env bash
# Starts a real `systemd --user` manager for the node-executor tests, contained first in a
# cgroup of its own in every hierarchy (shared recipe systemd.md): a manager adopts the
# cgroup it starts in as its root, and started in the machine's root cgroup it would move
# every process of the machine. Refuses (exit 3, reason on stderr) when containment fails.
# Usage: systemd-manager.sh CGROUP_NAME BASE_DIR
set -euo pipefail
name=$1 B=$2
# Read the list once: it changes while this shell moves between cgroups.
hierarchies=$(cat /proc/self/cgroup)
while IFS=: read -r _ ctrls _; do
  case "$ctrls" in
    "") dir=/sys/fs/cgroup/unified ;;
    name=systemd) dir=/sys/fs/cgroup/systemd ;;
    *) dir=/sys/fs/cgroup/${ctrls%%,*} ;;
  esac
  [ -d "$dir" ] || { echo "no cgroup mount for '$ctrls' at $dir" >&2; exit 3; }
  mkdir -p "$dir/$name"
  if [ "$ctrls" = cpuset ]; then
    cat "$dir/cpuset.cpus" > "$dir/$name/cpuset.cpus"
    cat "$dir/cpuset.mems" > "$dir/$name/cpuset.mems"
  fi
  echo $$ > "$dir/$name/cgroup.procs" || { echo "cannot move into $dir/$name" >&2; exit 3; }
done <<< "$hierarchies"
while IFS=: read -r _ ctrls path; do
  case "$path" in
    */"$name") ;;
    *) echo "containment failed: hierarchy '$ctrls' is at '$path', not in $name; refusing to start systemd" >&2; exit 3 ;;
  esac
done <<< "$(cat /proc/self/cgroup)"
mkdir -p "$B/run" "$B/config/systemd" "$B/home"; chmod 700 "$B/run"; : > "$B/console.log"
# MCP_USER_UNIT_DIR, when set, becomes the manager's own unit directory (where enable makes
# its links): a node root's etc/systemd/system, so that the manager links where a system
# manager would in that root.
if [ -n "${MCP_USER_UNIT_DIR:-}" ]; then
  ln -s "$MCP_USER_UNIT_DIR" "$B/config/systemd/user"
else
  mkdir -p "$B/config/systemd/user"
fi
export B
exec unshare --mount --propagation private /bin/bash -c '
  mount -t tmpfs -o mode=755 tmpfs /run/systemd
  mkdir /run/systemd/system
  mount --bind "$B/console.log" /dev/console
  export XDG_RUNTIME_DIR=$B/run XDG_CONFIG_HOME=$B/config HOME=$B/home
  unset DBUS_SESSION_BUS_ADDRESS
  exec /lib/systemd/systemd --user --log-target=console </dev/null'
