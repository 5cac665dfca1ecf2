#!/usr/bin/env bash
# Stops the processes up.sh started (by their PID files); --purge also
# removes etcd's data and the certificates.
set -euo pipefail
state=${WEFT_KUBE_STATE:-${WEFT_CACHE:-$HOME/.cache/weft}/kube}
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
if [ "${1:-}" = "--purge" ]; then rm -rf "$state"; fi
