#!/usr/bin/env bash
# Starts the local cluster's one node (called by up.sh with the directory of
# the built binaries): containerd with a config of its own (socket, root and
# state under the cluster's state dir; the kubelet's sandbox image; cgroupfs;
# a bridge CNI network), the images built on this machine, and the kubelet,
# then waits for the Node to be Ready.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
cache=${WEFT_CACHE:-$HOME/.cache/weft}
state=${WEFT_KUBE_STATE:-$cache/kube}
node=$(hostname | tr '[:upper:]' '[:lower:]')
ctrd=$state/containerd
sock=$ctrd/containerd.sock
log() { echo "kube/node-up: $*" >&2; }
alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }
mkdir -p "$ctrd" "$state/cni/net.d" "$state/kubelet" "$state/logs"

# One node per machine: a second cluster's kubelet (the e2e suites' under
# ~/.cache/weft/kube, the benchmarks' under ~/.cache/weft/bench-kube) would
# share this one's cgroup root (kubepods, whose pods each kubelet's QoS
# manager treats as its own), its ports (10250, 10248) and the pods'
# bridge (weft0, 10.88.0.0/16). Refuse, naming the one to stop.
if ! alive kubelet; then
  for pid in $(pgrep -f -- "kubelet --config " || true); do
    other=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | sed -n 's/.*--root-dir \([^ ]*\)\/kubelet\/root .*/\1/p')
    if [ -n "$other" ] && [ "$other" != "$state" ]; then
      log "another cluster's node runs on this machine (kubelet pid $pid, state $other): stop it first (WEFT_KUBE_STATE=$other $here/down.sh)"
      exit 1
    fi
  done
fi

# restrict_oom_score_adj: this machine withholds CAP_SYS_RESOURCE, so runc
# cannot lower a container's oom_score_adj below containerd's own (the
# kubelet asks -998 for sandboxes); containerd clamps it instead.
cat > "$ctrd/config.toml" <<TOML
version = 2
root = "$ctrd/root"
state = "$ctrd/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "weft.local/pause:3.10"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
TOML
# Pods' own network: a bridge on this machine with no masquerading, so pod
# traffic stays here.
cat > "$state/cni/net.d/10-weft.conflist" <<'JSON'
{"cniVersion": "1.0.0", "name": "weft",
 "plugins": [
  {"type": "bridge", "bridge": "weft0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]]}},
  {"type": "loopback"}
 ]}
JSON

if ! alive containerd; then
  log "starting containerd ($sock)"
  # The previous run's log is kept (.prev): a flake is told there.
  [ -f "$state/logs/containerd.log" ] && mv -f "$state/logs/containerd.log" "$state/logs/containerd.log.prev"
  setsid containerd --config "$ctrd/config.toml" >"$state/logs/containerd.log" 2>&1 </dev/null &
  echo $! > "$state/containerd.pid"
  for _ in $(seq 100); do ctr --address "$sock" version >/dev/null 2>&1 && break; sleep 0.2; done
fi

# The cluster's images (pause, busybox, node-runtime), imported when changed.
(cd "$here/../.." && go build -o "$cache/bin/kube-images" ./cmd/kube-images)
"$cache/bin/kube-images" -address "$sock" -dir "$state/images" -cluster

# anonymous + AlwaysAllow: the kubelet's API listens on 127.0.0.1 only, for
# the API server's logs/exec proxy of this single-user test machine.
cat > "$state/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
serializeImagePulls: false
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
YAML
# The Node in etcd may still say Ready from a kubelet of an earlier run:
# a kubelet started here counts as Ready once it has itself posted a
# heartbeat (the condition's lastHeartbeatTime after its start), so that
# nothing is bound to the node before the kubelet runs pods.
since=""
if ! alive kubelet; then
  log "starting kubelet (node $node)"
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -f "$state/logs/kubelet.log" ] && mv -f "$state/logs/kubelet.log" "$state/logs/kubelet.log.prev"
  setsid "$bin/kubelet" --config "$state/kubelet/config.yaml" --kubeconfig "$state/kubeconfig" \
    --root-dir "$state/kubelet/root" --hostname-override "$node" \
    >"$state/logs/kubelet.log" 2>&1 </dev/null &
  echo $! > "$state/kubelet.pid"
fi
kubectl_() { "$bin/kubectl" --kubeconfig "$state/kubeconfig" "$@"; }
for _ in $(seq 300); do
  # Not found yet (a fresh cluster) is not an error: the loop waits.
  ready=$(kubectl_ get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}' 2>/dev/null || true)
  # RFC 3339 UTC times compare as strings.
  if [ "${ready%% *}" = True ] && { [ -z "$since" ] || [[ ! "${ready#* }" < "$since" ]]; }; then exit 0; fi
  alive kubelet || break
  sleep 0.2
done
log "node $node did not become Ready; see $state/logs/kubelet.log"
tail -20 "$state/logs/kubelet.log" >&2
exit 1
