#!/usr/bin/env bash
# Brings up, idempotently and on loopback only, a single-machine Kubernetes
# control plane for Weft's tests: etcd (Debian's etcd-server), and
# kube-apiserver, kube-controller-manager and kube-scheduler built from the
# Go module proxy (./k8s, pinned). Prints the admin kubeconfig's path. Run
# ./down.sh to stop what it started.
#
# The node: the kubelet (built the same way) on Debian's containerd and runc,
# cgroupfs driver, a bridge CNI network of its own (10.88.0.0/16, no route
# out), images built on this machine (cmd/kube-images) instead of
# pulled. Set WEFT_KUBE_NODE=0 for the control plane alone.
#
# --nodes N (or WEFT_KUBE_NODES=N) brings up a kind-style cluster instead
# (net.sh): the control plane and N nodes each in a network namespace of
# its own with its own address, each node with its own containerd,
# kubelet and cgroup subtree (/weft-node-i), state under
# ~/.cache/weft/kube-nodes. Each node gets an Nth of this machine's CPUs
# and memory (node-up.sh), and every name of the cluster an /etc/hosts
# entry. It shares no port, cgroup or bridge with the one-node cluster, so
# both can run at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEFT_CACHE:-$HOME/.cache/weft}
nodes=${WEFT_KUBE_NODES:-0}
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    *) echo "kube/up: unknown argument $1 (usage: up.sh [--nodes N])" >&2; exit 2 ;;
  esac
done
[[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -le 20 ] || { echo "kube/up: --nodes takes 1 to 20" >&2; exit 2; }
if [ "$nodes" -gt 0 ]; then
  state=${WEFT_KUBE_STATE:-$cache/kube-nodes}
else
  state=${WEFT_KUBE_STATE:-$cache/kube}
fi
# node-up.sh finds the cluster's state where this script keeps it.
export WEFT_KUBE_STATE=$state
# shellcheck source=net.sh
. "$here/net.sh"
# cp runs a control-plane process where the control plane lives: this
# machine's network, or the kind-style cluster's control-plane namespace.
cp_ip=127.0.0.1
cp=()
if [ "$nodes" -gt 0 ]; then
  cp_ip=$net_cp_ip
  cp=(nsenter --net=/run/netns/weft-cp)
fi
etcd_port=${WEFT_ETCD_PORT:-23790}
api_port=${WEFT_APISERVER_PORT:-26443}
# The binaries report the version they are built from (kubectl get nodes,
# /version), as released ones do: component-base's version variables,
# which a build outside Kubernetes' own scripts leaves at v0.0.0-master.
k8s_version=$(sed -n 's/^\tk8s.io\/kubernetes v\([0-9.]*\)$/\1/p' "$here/k8s/go.mod")
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags="$k8s_ldflags -X $pkg.gitVersion=v$k8s_version -X $pkg.gitMajor=${k8s_version%%.*}"
  minor=${k8s_version#*.}
  k8s_ldflags="$k8s_ldflags -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
done
stamp=$( (cat "$here/k8s/go.mod" "$here/k8s/go.sum" "$here"/k8s/cmd/*/main.go; echo "$k8s_ldflags") | sha256sum | cut -c1-12)
bin=$cache/k8s/bin-$stamp
mkdir -p "$state/logs" "$cache/k8s"
log() { echo "kube/up: $*" >&2; }

alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }
ready() { curl -sf --max-time 2 --cacert "$state/pki/ca.crt" -H "Authorization: Bearer $(cat "$state/pki/admin.token" 2>/dev/null)" \
  "https://$cp_ip:$api_port/readyz" >/dev/null 2>&1; }

with_node=${WEFT_KUBE_NODE:-1}
# WEFT_KUBE_SCHEDULER=0 leaves kube-scheduler out (a benchmark starts its own).
with_scheduler=${WEFT_KUBE_SCHEDULER:-1}
node_alive() {
  [ "$with_node" = 0 ] && return 0
  if [ "$nodes" -eq 0 ]; then alive containerd && alive kubelet; return; fi
  local i
  for i in $(seq "$nodes"); do
    alive "nodes/$(net_node_name "$i")/containerd" && alive "nodes/$(net_node_name "$i")/kubelet" &&
      alive "nodes/$(net_node_name "$i")/kube-proxy" || return 1
  done
}
scheduler_alive() { [ "$with_scheduler" = 0 ] || alive kube-scheduler; }
# The kind-style cluster's names in /etc/hosts (net.sh), written even when
# the cluster is up already: YARN reaches its nodes by name.
if [ "$nodes" -gt 0 ]; then
  net_hosts_up "$nodes"
fi
if alive etcd && alive kube-apiserver && alive kube-controller-manager && scheduler_alive && node_alive && ready; then
  echo "$state/kubeconfig"
  exit 0
fi

# Tools: etcd and openssl from Debian.
if ! command -v etcd >/dev/null || ! command -v openssl >/dev/null; then
  log "installing etcd-server and openssl"
  apt-get update -qq && apt-get install -y -qq etcd-server openssl >/dev/null
fi

if [ "$with_node" != 0 ] && { ! command -v containerd >/dev/null || ! command -v runc >/dev/null || [ ! -x /usr/lib/cni/bridge ] || [ ! -x /bin/busybox ]; }; then
  log "installing containerd, runc, CNI plugins and busybox-static"
  apt-get update -qq && apt-get install -y -qq containerd runc containernetworking-plugins busybox-static >/dev/null
fi

# The control plane's binaries: built once per pinned module set;
# concurrent callers wait.
exec 9>"$cache/k8s/build.lock"
flock 9
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kube-controller-manager" ] || [ ! -x "$bin/kube-scheduler" ] || [ ! -x "$bin/kubelet" ] ||
  [ ! -x "$bin/kubectl" ] || [ ! -x "$bin/kube-proxy" ]; then
  # A first build is long and would otherwise be silent: say so up front
  # and every minute.
  log "building Kubernetes v$k8s_version from the Go module proxy (once: about 10-15 minutes on 2 cores)"
  started=$SECONDS
  (while sleep 60; do log "still building Kubernetes ($(( (SECONDS - started) / 60 )) min)"; done) &
  ticker=$!
  rc=0
  (cd "$here/k8s" && go build -trimpath -ldflags="$k8s_ldflags" -o "$bin/" ./cmd/...) || rc=$?
  kill "$ticker" 2>/dev/null || true
  [ "$rc" = 0 ] || { log "building Kubernetes failed"; exit "$rc"; }
  log "built Kubernetes in $(( (SECONDS - started) / 60 )) min"
fi
# The kind-style cluster's DNS: CoreDNS from the Go module proxy, with the
# plugins its Corefile names (coredns/), built once per pinned version —
# with the one-node cluster's first start too, so that a first kind-style
# start (the e2e suite's, bounded by its first spec's timeout) finds it.
dns_stamp=$(cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" | sha256sum | cut -c1-12)
dns_bin=$cache/coredns/bin-$dns_stamp/coredns
if [ "$nodes" -gt 0 ]; then
  export WEFT_COREDNS_BIN=$dns_bin
fi
if [ "$with_node" != 0 ]; then
  if [ ! -x "$dns_bin" ]; then
    log "building CoreDNS from the Go module proxy (once: about 3 minutes on 2 cores)"
    started=$SECONDS
    (cd "$here/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$dns_bin" .) ||
      { log "building CoreDNS failed"; exit 1; }
    log "built CoreDNS in $((SECONDS - started)) s"
  fi
fi
flock -u 9
mkdir -p "$cache/bin"
ln -sfn "$bin/kubectl" "$cache/bin/kubectl"
ln -sfn "$bin/kube-scheduler" "$cache/bin/kube-scheduler"

# Certificates and credentials, made once. The API server's names are
# those a client in a pod uses too: the kubernetes Service's address and
# DNS names. A certificate from before they were named is made again.
pki=$state/pki
if [ -f "$pki/apiserver.crt" ] && ! openssl x509 -in "$pki/apiserver.crt" -noout -text | grep -q "IP Address:$net_api_service_ip"; then
  rm -f "$pki/apiserver.crt"
fi
if [ ! -f "$pki/ca.crt" ]; then
  log "generating certificates"
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=weft-local-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$pki/admin.token"
  printf '%s,admin,admin,system:masters\n' "$(cat "$pki/admin.token")" > "$pki/tokens.csv"
fi
if [ ! -f "$pki/apiserver.crt" ]; then
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n' \
    "$net_cp_ip" "$net_api_service_ip" > "$pki/san.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
fi

# The kind-style cluster's namespaces and routes (net.sh), before anything
# starts in them.
if [ "$nodes" -gt 0 ]; then
  net_up "$nodes"
fi
kubelet_address_types=Hostname,InternalIP
[ "$nodes" -gt 0 ] && kubelet_address_types=InternalIP

if ! alive etcd; then
  log "starting etcd on $cp_ip:$etcd_port"
  setsid "${cp[@]}" etcd --name weft --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
    --initial-cluster "weft=http://127.0.0.1:$((etcd_port + 10))" \
    >"$state/logs/etcd.log" 2>&1 </dev/null &
  echo $! > "$state/etcd.pid"
  for _ in $(seq 100); do "${cp[@]}" curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break; sleep 0.2; done
fi

# The one-node cluster: the kubelet refuses a loopback node IP, so the
# node's InternalIP is this machine's own address; the API server reaches
# the kubelet (logs, exec) by the node's hostname instead, which resolves to
# 127.0.0.1, where the kubelet listens. A kind-style node's kubelet listens
# on its node's own address, its InternalIP.
if ! alive kube-apiserver; then
  log "starting kube-apiserver on $cp_ip:$api_port"
  setsid "${cp[@]}" "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address "$cp_ip" --advertise-address "$cp_ip" --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --token-auth-file "$pki/tokens.csv" \
    --authorization-mode RBAC --service-cluster-ip-range "$net_services" --allow-privileged \
    --kubelet-preferred-address-types "$kubelet_address_types" \
    >"$state/logs/kube-apiserver.log" 2>&1 </dev/null &
  echo $! > "$state/kube-apiserver.pid"
fi
for _ in $(seq 150); do ready && break; sleep 0.2; done
if ! ready; then
  log "kube-apiserver did not become ready; see $state/logs/kube-apiserver.log"
  tail -20 "$state/logs/kube-apiserver.log" >&2
  exit 1
fi

cat > "$state/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: weft-local
  cluster:
    server: https://$cp_ip:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: admin
  user:
    token: $(cat "$pki/admin.token")
contexts:
- name: weft-local
  context: {cluster: weft-local, user: admin}
current-context: weft-local
KUBECONFIG
# Controllers (default ServiceAccounts, garbage collection, ...) and the
# default scheduler, as the admin: a local test cluster.
if ! alive kube-controller-manager; then
  log "starting kube-controller-manager"
  setsid "${cp[@]}" "$bin/kube-controller-manager" --kubeconfig "$state/kubeconfig" --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials=false \
    >"$state/logs/kube-controller-manager.log" 2>&1 </dev/null &
  echo $! > "$state/kube-controller-manager.pid"
fi
if [ "$with_scheduler" != 0 ] && ! alive kube-scheduler; then
  log "starting kube-scheduler"
  setsid "${cp[@]}" "$bin/kube-scheduler" --kubeconfig "$state/kubeconfig" --secure-port 0 --leader-elect=false \
    >"$state/logs/kube-scheduler.log" 2>&1 </dev/null &
  echo $! > "$state/kube-scheduler.pid"
fi
sleep 1
for p in kube-controller-manager $([ "$with_scheduler" = 0 ] || echo kube-scheduler); do
  alive "$p" || { log "$p exited; see $state/logs/$p.log"; tail -20 "$state/logs/$p.log" >&2; exit 1; }
done
if [ "$with_node" != 0 ] && [ "$nodes" -eq 0 ]; then
  "$here/node-up.sh" "$bin"
elif [ "$with_node" != 0 ]; then
  # The nodes start together and are waited for together: each one's
  # kubelet registers in parallel with the others'.
  pids=()
  for i in $(seq "$nodes"); do
    WEFT_NODE_INDEX=$i WEFT_NODE_COUNT=$nodes "$here/node-up.sh" "$bin" &
    pids+=($!)
  done
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  [ "$failed" = 0 ] || exit 1
  # The cluster DNS, as kind and kubeadm deploy it: CoreDNS behind the
  # kube-dns Service, answered once it serves.
  sed "s/@DNS_IP@/$net_dns_ip/" "$here/coredns.yaml" | "$bin/kubectl" --kubeconfig "$state/kubeconfig" apply -f - >/dev/null
  if ! "$bin/kubectl" --kubeconfig "$state/kubeconfig" -n kube-system rollout status deployment/coredns --timeout 2m >/dev/null; then
    log "CoreDNS did not become available; see kubectl -n kube-system describe pods -l k8s-app=kube-dns"
    exit 1
  fi
fi
echo "$state/kubeconfig"
