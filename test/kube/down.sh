#!/usr/bin/env bash
# Stops the processes up.sh started (by their PID files); --purge also
# removes etcd's data and the certificates.
set -euo pipefail
state=${WEFT_KUBE_STATE:-${WEFT_CACHE:-$HOME/.cache/weft}/kube}
# The node first: the kubelet, then the containers it left (their shims exit
# with them), then containerd.
stop() {
  local pid
  pid=$(cat "$state/$1.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  rm -f "$state/$1.pid"
}
[ -f "$state/kubelet.pid" ] && stop kubelet
if [ -f "$state/containerd.pid" ]; then
  ctr=(ctr --address "$state/containerd/containerd.sock" -n k8s.io)
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
    "${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
    "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
  done
  stop containerd
fi
# Containers whose containerd is gone already (it died, or was killed with
# a terminal's process group) still run under their shims: end each shim
# of this containerd — found by the socket it names — and what it runs.
sock="$state/containerd/containerd.sock"
descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    descendants "$c"
    echo "$c"
  done
}
for shim in $(pgrep -f "containerd-shim.* -address $sock" || true); do
  for p in $(descendants "$shim") "$shim"; do kill -9 "$p" 2>/dev/null || true; done
done
# The big box — the kubelet's BestEffort cgroup, which the node plugin's
# colocation agent bounds (CFS quota, memory limit, cpuset) and, by design,
# leaves bounded when it stops, so that a restarting agent lets no batch
# work loose — goes unbounded with the node: a bound left from this run
# would throttle every BestEffort pod of the next, before any agent runs.
release_box() {
  local cg=/sys/fs/cgroup d all
  if [ -d "$cg/cpu/kubepods/besteffort" ]; then # cgroup v1
    echo -1 > "$cg/cpu/kubepods/besteffort/cpu.cfs_quota_us" 2>/dev/null || true
    echo -1 > "$cg/memory/kubepods/besteffort/memory.limit_in_bytes" 2>/dev/null || true
    if [ -d "$cg/cpuset/kubepods/besteffort" ]; then
      all=$(cat "$cg/cpuset/cpuset.cpus")
      # Parents before children: a child's CPUs must be its parent's.
      find "$cg/cpuset/kubepods/besteffort" -type d | sort | while read -r d; do
        echo "$all" > "$d/cpuset.cpus" 2>/dev/null || true
      done
    fi
  elif [ -d "$cg/kubepods/besteffort" ]; then # cgroup v2, cgroupfs driver
    echo max > "$cg/kubepods/besteffort/cpu.max" 2>/dev/null || true
    echo max > "$cg/kubepods/besteffort/memory.max" 2>/dev/null || true
    find "$cg/kubepods/besteffort" -type d | sort | while read -r d; do
      [ -f "$d/cpuset.cpus" ] && echo > "$d/cpuset.cpus" 2>/dev/null || true
    done
  fi
}
release_box
for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do
  if [ -f "$state/$p.pid" ]; then
    pid=$(cat "$state/$p.pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    fi
    rm -f "$state/$p.pid"
  fi
done
if [ "${1:-}" = "--purge" ]; then
  # The kubelet's root holds mounts of pods' volumes, and containerd's
  # state the sandboxes' /dev/shm (left mounted when their shims are
  # killed rather than stopped): unmount both, deepest first, before
  # removing.
  for d in "$state/kubelet/root" "$state/containerd"; do
    [ -d "$d" ] || continue
    { grep -o " $d[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount "$m" 2>/dev/null || true; done
  done
  rm -rf "$state"
fi
