#!/usr/bin/env bash
# Stops the processes up.sh started (by their PID files); --purge also
# removes etcd's data and the certificates. --nodes N (any N > 0) stops the
# kind-style cluster up.sh --nodes started, its nodes and its network,
# and takes its names out of /etc/hosts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEFT_CACHE:-$HOME/.cache/weft}
purge=0 kind=${WEFT_KUBE_NODES:-0}
while [ $# -gt 0 ]; do
  case $1 in
    --purge) purge=1; shift ;;
    --nodes) kind=$2; shift 2 ;;
    --nodes=*) kind=${1#--nodes=}; shift ;;
    *) echo "kube/down: unknown argument $1 (usage: down.sh [--nodes N] [--purge])" >&2; exit 2 ;;
  esac
done
if [ "$kind" != 0 ]; then
  state=${WEFT_KUBE_STATE:-$cache/kube-nodes}
else
  state=${WEFT_KUBE_STATE:-$cache/kube}
fi
# shellcheck source=net.sh
. "$here/net.sh"
# stop P: the process of the PID file P.pid, by its PID.
stop() {
  local pid
  pid=$(cat "$state/$1.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -f "$state/$1.pid"
}
descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    descendants "$c"
    echo "$c"
  done
}
# release_box CGROUP_ROOT: the big box — the kubelet's BestEffort cgroup
# below the node's cgroup root, which the node plugin's colocation agent
# bounds (CFS quota, memory limit, cpuset) and, by design, leaves bounded
# when it stops, so that a restarting agent lets no batch work loose — goes
# unbounded with the node: a bound left from this run would throttle every
# BestEffort pod of the next, before any agent runs.
release_box() {
  local cg=/sys/fs/cgroup d all box
  box=${1#/}${1:+/}kubepods/besteffort
  if [ -d "$cg/cpu/$box" ]; then # cgroup v1
    echo -1 > "$cg/cpu/$box/cpu.cfs_quota_us" 2>/dev/null || true
    echo -1 > "$cg/memory/$box/memory.limit_in_bytes" 2>/dev/null || true
    if [ -d "$cg/cpuset/$box" ]; then
      all=$(cat "$cg/cpuset/cpuset.cpus")
      # Parents before children: a child's CPUs must be its parent's.
      find "$cg/cpuset/$box" -type d | sort | while read -r d; do
        echo "$all" > "$d/cpuset.cpus" 2>/dev/null || true
      done
    fi
  elif [ -d "$cg/$box" ]; then # cgroup v2, cgroupfs driver
    echo max > "$cg/$box/cpu.max" 2>/dev/null || true
    echo max > "$cg/$box/memory.max" 2>/dev/null || true
    find "$cg/$box" -type d | sort | while read -r d; do
      [ -f "$d/cpuset.cpus" ] && echo > "$d/cpuset.cpus" 2>/dev/null || true
    done
  fi
}
# stop_node DIR CGROUP_ROOT: a node whose state is under $state/DIR (""
# for the one-node cluster's): the kubelet, then the containers it left
# (their shims exit with them), then containerd; then its big box.
stop_node() {
  local dir=$1 root=$2 nstate sock t shim p
  nstate=$state${dir:+/$dir}
  [ -f "$nstate/kube-proxy.pid" ] && stop "${dir:+$dir/}kube-proxy"
  [ -f "$nstate/kubelet.pid" ] && stop "${dir:+$dir/}kubelet"
  if [ -f "$nstate/containerd.pid" ]; then
    local ctr=(ctr --address "$nstate/containerd/containerd.sock" -n k8s.io)
    for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
      "${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
    sleep 0.5
    for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
      "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
    done
    stop "${dir:+$dir/}containerd"
  fi
  # Containers whose containerd is gone already (it died, or was killed
  # with a terminal's process group) still run under their shims: end each
  # shim of this containerd — found by the socket it names — and what it
  # runs.
  sock="$nstate/containerd/containerd.sock"
  for shim in $(pgrep -f "containerd-shim.* -address $sock" || true); do
    for p in $(descendants "$shim") "$shim"; do kill -9 "$p" 2>/dev/null || true; done
  done
  release_box "$root"
}
if [ "$kind" != 0 ]; then
  for d in "$state"/nodes/*/; do
    [ -d "$d" ] || continue
    n=$(basename "$d")
    stop_node "nodes/$n" "/$n"
  done
else
  stop_node "" ""
fi
for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do
  if [ -f "$state/$p.pid" ]; then stop "$p"; fi
done
# The kind-style cluster's namespaces and links go once nothing runs in
# them, and its names leave /etc/hosts.
if [ "$kind" != 0 ]; then
  net_down
  net_hosts_down
fi
if [ "$purge" = 1 ]; then
  # The kubelet's root holds mounts of pods' volumes, and containerd's
  # state the sandboxes' /dev/shm (left mounted when their shims are
  # killed rather than stopped): unmount both, deepest first, before
  # removing.
  for d in "$state/kubelet/root" "$state/containerd" "$state"/nodes/*/kubelet/root "$state"/nodes/*/containerd; do
    [ -d "$d" ] || continue
    { grep -o " $d[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount "$m" 2>/dev/null || true; done
  done
  rm -rf "$state"
  # A kind-style node's cgroup subtree, deepest first (rmdir removes only
  # what no process holds).
  find /sys/fs/cgroup/*/ -mindepth 1 -maxdepth 1 -type d -name 'weft-node-*' 2>/dev/null | while read -r d; do
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
fi
