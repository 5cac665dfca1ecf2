#!/usr/bin/env bash
# Starts a node of the local cluster (called by up.sh with the directory of
# the built binaries): containerd with a config of its own (socket, root and
# state under the node's state dir; the kubelet's sandbox image; cgroupfs;
# a bridge CNI network), the images built on this machine, and the kubelet,
# then waits for the Node to be Ready.
#
# Without WEFT_NODE_INDEX, the one-node cluster's node: this machine's
# network and cgroup root, state in the cluster's state dir. With
# WEFT_NODE_INDEX=i, node i of a kind-style cluster (net.sh): containerd
# and the kubelet run in the node's network namespace on its own address,
# pods in the node's cgroup subtree (/weft-node-i) and pod range, state
# under nodes/weft-node-i; WEFT_NODE_COUNT=N, the cluster's nodes, makes
# the node's capacity an Nth of this machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$1
cache=${WEFT_CACHE:-$HOME/.cache/weft}
state=${WEFT_KUBE_STATE:-$cache/kube}
# shellcheck source=net.sh
. "$here/net.sh"
index=${WEFT_NODE_INDEX:-}
if [ -z "$index" ]; then
  node=$(hostname | tr '[:upper:]' '[:lower:]')
  nstate=$state
  in_node=()
  node_address=127.0.0.1
  cgroup_root=/
  pod_subnet=10.88.0.0/16
else
  node=$(net_node_name "$index")
  nstate=$state/nodes/$node
  in_node=(nsenter --net="/run/netns/$node")
  node_address=$(net_node_ip "$index")
  cgroup_root=/$node
  pod_subnet=$(net_pod_subnet "$index")
  # The node's share of this machine, an Nth of its CPUs and memory (as
  # the kubelet counts them), so that the nodes together offer the machine
  # once: a bound on its cgroup root, and the kubelet's systemReserved the
  # rest, so that its allocatable says the same.
  count=${WEFT_NODE_COUNT:?must be set with WEFT_NODE_INDEX: the number of nodes}
  cpus=$(getconf _NPROCESSORS_ONLN)
  memory=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
  share_cpu_quota=$((cpus * 100000 / count))
  share_memory=$((memory / count))
  reserved_milli_cpu=$((cpus * 1000 - cpus * 1000 / count))
  reserved_memory=$((memory - share_memory))
fi
ctrd=$nstate/containerd
sock=$ctrd/containerd.sock
log() { echo "kube/node-up${index:+ $node}: $*" >&2; }
alive() { [ -f "$nstate/$1.pid" ] && kill -0 "$(cat "$nstate/$1.pid")" 2>/dev/null; }
mkdir -p "$ctrd" "$nstate/cni/net.d" "$nstate/kubelet" "$nstate/logs"

# One node in this machine's network: a second cluster's kubelet there
# (the e2e suites' under ~/.cache/weft/kube, the benchmarks' under
# ~/.cache/weft/bench-kube) would share this one's cgroup root (kubepods,
# whose pods each kubelet's QoS manager treats as its own), its ports
# (10250, 10248) and the pods' bridge (weft0, 10.88.0.0/16). Refuse, naming
# the one to stop. A kind-style node has a network namespace and cgroup
# subtree of its own, and shares none of these.
if [ -z "$index" ] && ! alive kubelet; then
  here_net=$(readlink /proc/self/ns/net)
  for pid in $(pgrep -f -- "kubelet --config " || true); do
    [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$here_net" ] || continue
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
    conf_dir = "$nstate/cni/net.d"
TOML
# Pods' own network: a bridge on this machine with no masquerading, so pod
# traffic stays here.
# A kind-style node's bridge is in its own namespace, its range its own;
# its pods route the cluster's ranges (the nodes', every node's pods' and
# the Services', which the node's kube-proxy translates) through it, and
# net.sh routes the other nodes' ranges to them. Nothing else is routed: a
# pod reaches nothing outside the machine. Each node's host-local keeps its
# leases in a dataDir of its own.
ipam_more=
[ -n "$index" ] && ipam_more=", \"dataDir\": \"$nstate/cni/ipam\", \"routes\": [{\"dst\": \"$net_prefix.0.0/24\"}, {\"dst\": \"$net_pods\"}, {\"dst\": \"$net_services\"}]"
cat > "$nstate/cni/net.d/10-weft.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "weft",
 "plugins": [
  {"type": "bridge", "bridge": "weft0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$pod_subnet"}]]$ipam_more}},
  {"type": "loopback"}
 ]}
JSON

# A kind-style node's cgroup subtree: the kubelet manages its pods' QoS
# cgroups below a root that must exist. A v1 cpuset cgroup starts with no
# CPUs or memory nodes; it gets its parent's. The root is bounded to the
# node's share before the kubelet starts. The kernel refuses a bound below
# what a cgroup under it already has (v1: a CFS quota; memory in use it
# cannot reclaim): the node then keeps its earlier bound, if any, and the
# log says so.
bound() {
  echo "$2" > "$1" 2>/dev/null || log "cannot set $1 to $2: the node's pods may use more than its share"
}
if [ "$cgroup_root" != / ]; then
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p "/sys/fs/cgroup$cgroup_root"
    c=/sys/fs/cgroup$cgroup_root
    if [ -f "$c/cpu.max" ]; then bound "$c/cpu.max" "$share_cpu_quota 100000"; fi
    if [ -f "$c/memory.max" ]; then bound "$c/memory.max" "$share_memory"; fi
  else
    for c in /sys/fs/cgroup/*/; do
      [ -L "${c%/}" ] && continue
      mkdir -p "$c${cgroup_root#/}"
      if [ -f "${c}cpuset.cpus" ] && [ -z "$(cat "$c${cgroup_root#/}/cpuset.cpus")" ]; then
        cat "${c}cpuset.cpus" > "$c${cgroup_root#/}/cpuset.cpus"
        cat "${c}cpuset.mems" > "$c${cgroup_root#/}/cpuset.mems"
      fi
    done
    # cpu may be mounted on its own or with cpuacct (cpu then a link to
    # cpu,cpuacct): this path is the hierarchy either way.
    c=/sys/fs/cgroup/cpu$cgroup_root
    bound "$c/cpu.cfs_period_us" 100000
    bound "$c/cpu.cfs_quota_us" "$share_cpu_quota"
    bound "/sys/fs/cgroup/memory$cgroup_root/memory.limit_in_bytes" "$share_memory"
  fi
fi

if ! alive containerd; then
  log "starting containerd ($sock)"
  # The previous run's log is kept (.prev): a flake is told there.
  [ -f "$nstate/logs/containerd.log" ] && mv -f "$nstate/logs/containerd.log" "$nstate/logs/containerd.log.prev"
  setsid "${in_node[@]}" containerd --config "$ctrd/config.toml" >"$nstate/logs/containerd.log" 2>&1 </dev/null &
  echo $! > "$nstate/containerd.pid"
  for _ in $(seq 100); do ctr --address "$sock" version >/dev/null 2>&1 && break; sleep 0.2; done
fi

# The cluster's images (pause, busybox, node-runtime; a kind-style node's
# also CoreDNS, which up.sh built), imported when changed.
(cd "$here/../.." && go build -o "$cache/bin/kube-images" ./cmd/kube-images)
"$cache/bin/kube-images" -address "$sock" -dir "$nstate/images" -cluster ${WEFT_COREDNS_BIN:+-coredns "$WEFT_COREDNS_BIN"}

# anonymous + AlwaysAllow: the kubelet's API listens on 127.0.0.1 (or a
# kind-style node's address, inside this machine) only, for the API
# server's logs/exec proxy of this single-user test machine.
cat > "$nstate/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_address
port: 10250
cgroupRoot: $cgroup_root
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
# A kind-style node's allocatable is its share: the rest of the machine is
# reserved. Only the pods' cgroup enforces allocatable (the kubelet's
# default), as on the one-node cluster: nothing enforces the reservation.
if [ -n "$index" ]; then
  echo "systemReserved: {cpu: \"${reserved_milli_cpu}m\", memory: \"$reserved_memory\"}" >> "$nstate/kubelet/config.yaml"
  # Pods resolve names through the cluster DNS (up.sh's CoreDNS behind
  # the kube-dns Service), as on kind.
  printf 'clusterDNS: [%s]\nclusterDomain: cluster.local\n' "$net_dns_ip" >> "$nstate/kubelet/config.yaml"
fi
# The Node in etcd may still say Ready from a kubelet of an earlier run:
# a kubelet started here counts as Ready once it has itself posted a
# heartbeat (the condition's lastHeartbeatTime after its start), so that
# nothing is bound to the node before the kubelet runs pods.
since=""
if ! alive kubelet; then
  log "starting kubelet (node $node)"
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -f "$nstate/logs/kubelet.log" ] && mv -f "$nstate/logs/kubelet.log" "$nstate/logs/kubelet.log.prev"
  node_ip=()
  [ -n "$index" ] && node_ip=(--node-ip "$node_address")
  setsid "${in_node[@]}" "$bin/kubelet" --config "$nstate/kubelet/config.yaml" --kubeconfig "$state/kubeconfig" \
    --root-dir "$nstate/kubelet/root" --hostname-override "$node" "${node_ip[@]}" \
    >"$nstate/logs/kubelet.log" 2>&1 </dev/null &
  echo $! > "$nstate/kubelet.pid"
fi
# A kind-style node's kube-proxy, in iptables mode in the node's own
# namespace (its rules are the node's): Services' ClusterIPs reach their
# endpoints from the node and its pods. Conntrack limits are left to the
# machine, as kind leaves them (maxPerCore 0).
if [ -n "$index" ] && ! alive kube-proxy; then
  log "starting kube-proxy"
  cat > "$nstate/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $state/kubeconfig}
hostnameOverride: $node
mode: iptables
clusterCIDR: $net_pods
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
YAML
  [ -f "$nstate/logs/kube-proxy.log" ] && mv -f "$nstate/logs/kube-proxy.log" "$nstate/logs/kube-proxy.log.prev"
  setsid "${in_node[@]}" "$bin/kube-proxy" --config "$nstate/kube-proxy.yaml" \
    >"$nstate/logs/kube-proxy.log" 2>&1 </dev/null &
  echo $! > "$nstate/kube-proxy.pid"
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
log "node $node did not become Ready; see $nstate/logs/kubelet.log"
tail -20 "$nstate/logs/kubelet.log" >&2
exit 1
