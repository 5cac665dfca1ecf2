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
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEFT_CACHE:-$HOME/.cache/weft}
state=${WEFT_KUBE_STATE:-$cache/kube}
etcd_port=${WEFT_ETCD_PORT:-23790}
api_port=${WEFT_APISERVER_PORT:-26443}
stamp=$(cat "$here/k8s/go.mod" "$here/k8s/go.sum" "$here"/k8s/cmd/*/main.go | sha256sum | cut -c1-12)
bin=$cache/k8s/bin-$stamp
mkdir -p "$state/logs" "$cache/k8s"
log() { echo "kube/up: $*" >&2; }

alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }
ready() { curl -sf --max-time 2 --cacert "$state/pki/ca.crt" -H "Authorization: Bearer $(cat "$state/pki/admin.token" 2>/dev/null)" \
  "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; }

with_node=${WEFT_KUBE_NODE:-1}
# WEFT_KUBE_SCHEDULER=0 leaves kube-scheduler out (a benchmark starts its own).
with_scheduler=${WEFT_KUBE_SCHEDULER:-1}
node_alive() { [ "$with_node" = 0 ] || { alive containerd && alive kubelet; }; }
scheduler_alive() { [ "$with_scheduler" = 0 ] || alive kube-scheduler; }
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
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kube-controller-manager" ] || [ ! -x "$bin/kube-scheduler" ] || [ ! -x "$bin/kubelet" ] || [ ! -x "$bin/kubectl" ]; then
  log "building Kubernetes (a few minutes, once)"
  (cd "$here/k8s" && go build -trimpath -ldflags='-s -w' -o "$bin/" ./cmd/...)
fi
flock -u 9
mkdir -p "$cache/bin"
ln -sfn "$bin/kubectl" "$cache/bin/kubectl"
ln -sfn "$bin/kube-scheduler" "$cache/bin/kube-scheduler"

# Certificates and credentials, made once.
pki=$state/pki
if [ ! -f "$pki/apiserver.crt" ]; then
  log "generating certificates"
  mkdir -p "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=weft-local-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > "$pki/san.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/san.ext" -out "$pki/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$pki/admin.token"
  printf '%s,admin,admin,system:masters\n' "$(cat "$pki/admin.token")" > "$pki/tokens.csv"
fi

if ! alive etcd; then
  log "starting etcd on 127.0.0.1:$etcd_port"
  setsid etcd --name weft --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
    --initial-cluster "weft=http://127.0.0.1:$((etcd_port + 10))" \
    >"$state/logs/etcd.log" 2>&1 </dev/null &
  echo $! > "$state/etcd.pid"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break; sleep 0.2; done
fi

# The kubelet refuses a loopback node IP, so the node's InternalIP is this
# machine's own address; the API server reaches the kubelet (logs, exec) by
# the node's hostname instead, which resolves to 127.0.0.1, where the
# kubelet listens.
if ! alive kube-apiserver; then
  log "starting kube-apiserver on 127.0.0.1:$api_port"
  setsid "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --token-auth-file "$pki/tokens.csv" \
    --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/16 --allow-privileged \
    --kubelet-preferred-address-types Hostname,InternalIP \
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
    server: https://127.0.0.1:$api_port
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
  setsid "$bin/kube-controller-manager" --kubeconfig "$state/kubeconfig" --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials=false \
    >"$state/logs/kube-controller-manager.log" 2>&1 </dev/null &
  echo $! > "$state/kube-controller-manager.pid"
fi
if [ "$with_scheduler" != 0 ] && ! alive kube-scheduler; then
  log "starting kube-scheduler"
  setsid "$bin/kube-scheduler" --kubeconfig "$state/kubeconfig" --secure-port 0 --leader-elect=false \
    >"$state/logs/kube-scheduler.log" 2>&1 </dev/null &
  echo $! > "$state/kube-scheduler.pid"
fi
sleep 1
for p in kube-controller-manager $([ "$with_scheduler" = 0 ] || echo kube-scheduler); do
  alive "$p" || { log "$p exited; see $state/logs/$p.log"; tail -20 "$state/logs/$p.log" >&2; exit 1; }
done
if [ "$with_node" != 0 ]; then
  "$here/node-up.sh" "$bin"
fi
echo "$state/kubeconfig"
