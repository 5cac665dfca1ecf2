# Sourced by up.sh and down.sh: the network of a kind-style cluster, in
# which the control plane and each node have a network namespace of their
# own, as kind gives each node a container of its own.
#
#   this machine   weft-br     10.77.0.1/24 (a bridge this script makes)
#   control plane  weft-cp     10.77.0.2    (etcd, kube-apiserver, ...)
#   node i         weft-node-i 10.77.0.(10+i), pods in 10.78.i.0/24
#
# Every address is inside this machine: the bridge has no uplink and
# nothing masquerades, so no packet of the cluster leaves it. Each node
# routes the other nodes' pod ranges to them over the bridge (as kind's
# kindnet installs routes), so pods reach pods on other nodes without
# this machine forwarding anything.

net_bridge=weft-br
net_prefix=10.77
net_host_ip=$net_prefix.0.1
net_cp_ip=$net_prefix.0.2

net_node_name() { echo "weft-node-$1"; }
net_node_ip() { echo "$net_prefix.0.$((10 + $1))"; }
net_pods=10.78.0.0/16
# The Services' range (the API server's --service-cluster-ip-range), the
# kubernetes Service's address in it and the cluster DNS's, as kubeadm
# numbers them.
net_services=10.96.0.0/16
net_api_service_ip=10.96.0.1
net_dns_ip=10.96.0.10
net_pod_subnet() { echo "10.78.$1.0/24"; }

# net_in NS CMD... runs CMD in the network namespace NS and nothing else
# of it: `ip netns exec` would also remount /sys, hiding the cgroup
# hierarchies from the kubelet and containerd.
net_in() {
  local ns=$1
  shift
  nsenter --net="/run/netns/$ns" "$@"
}

# net_ns_up NS IP VETH: the namespace, its link to the bridge, its address.
net_ns_up() {
  local ns=$1 ip=$2 veth=$3
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$net_bridge" up
  fi
  ip -n "$ns" link set lo up
  ip -n "$ns" addr replace "$ip/24" dev eth0
  ip -n "$ns" link set eth0 up
}

# net_up N: the bridge, the control plane's namespace and N nodes'
# namespaces with their routes; idempotent.
net_up() {
  local n=$1 i j
  if ! ip link show "$net_bridge" >/dev/null 2>&1; then
    ip link add "$net_bridge" type bridge
  fi
  ip addr replace "$net_host_ip/24" dev "$net_bridge"
  ip link set "$net_bridge" up
  # Guards, left in place by net_down: without the bridge, a client still
  # holding the cluster's addresses gets "unreachable" at once instead of
  # having its packets routed out of the machine by the default route.
  ip route replace unreachable "$net_prefix.0.0/16"
  ip route replace unreachable "$net_pods"
  net_ns_up weft-cp "$net_cp_ip" weft-cp-h
  for i in $(seq "$n"); do
    net_ns_up "$(net_node_name "$i")" "$(net_node_ip "$i")" "weft-n$i-h"
    # A node forwards between its link and its pods' bridge, and its
    # bridge's traffic passes its iptables (kube-proxy's Service rules: a
    # pod's reply to another pod of the node, bridged, must be translated
    # back like any other).
    net_in "$(net_node_name "$i")" sysctl -qw net.ipv4.ip_forward=1
    net_in "$(net_node_name "$i")" sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
    # Its own processes (host-network pods) reach Services too: kube-proxy
    # translates a ClusterIP on the way out, once the kernel has a route.
    ip -n "$(net_node_name "$i")" route replace "$net_services" dev eth0
    # This machine reaches every pod (the tests' clients), the control
    # plane too (the API server answering pods, as kindnet routes it), and
    # each node every other node's pods, through the node that holds them.
    ip route replace "$(net_pod_subnet "$i")" via "$(net_node_ip "$i")" dev "$net_bridge"
    ip -n weft-cp route replace "$(net_pod_subnet "$i")" via "$(net_node_ip "$i")" dev eth0
    for j in $(seq "$n"); do
      [ "$i" = "$j" ] && continue
      ip -n "$(net_node_name "$i")" route replace "$(net_pod_subnet "$j")" via "$(net_node_ip "$j")" dev eth0
    done
  done
}

# The cluster's names in this machine's /etc/hosts, between these marker
# lines: YARN names a node by its Kubernetes node name (weft-node-2:8041),
# and clients here, the RM and AMs in host-network pods (whose /etc/hosts
# the kubelet copies from this machine's, the nodes sharing its
# filesystem) reach the node by that name, at the node's own address.
net_hosts=/etc/hosts
net_hosts_begin='# BEGIN weft kind-style cluster (test/kube/net.sh)'
net_hosts_end='# END weft kind-style cluster'

# net_hosts_strip: the hosts file without the cluster's block.
net_hosts_strip() {
  awk -v b="$net_hosts_begin" -v e="$net_hosts_end" \
    '$0 == b {skip = 1; next} skip && $0 == e {skip = 0; next} !skip' "$net_hosts"
}

# net_hosts_write FILE: the hosts file gets FILE's content, in place (it may
# be a bind mount, which a rename over it would not replace), and only if
# that changes it.
net_hosts_write() {
  cmp -s "$1" "$net_hosts" || cat "$1" > "$net_hosts"
}

# net_hosts_up N: the block for the control plane and N nodes, replacing
# an earlier one; every other line stays as it is.
net_hosts_up() {
  local n=$1 i tmp
  tmp=$(mktemp)
  {
    net_hosts_strip
    echo "$net_hosts_begin"
    echo "$net_cp_ip weft-cp"
    for i in $(seq "$n"); do
      echo "$(net_node_ip "$i") $(net_node_name "$i")"
    done
    echo "$net_hosts_end"
  } > "$tmp"
  net_hosts_write "$tmp"
  rm -f "$tmp"
}

# net_hosts_down: the block goes, if there is one.
net_hosts_down() {
  local tmp
  grep -qxF "$net_hosts_begin" "$net_hosts" 2>/dev/null || return 0
  tmp=$(mktemp)
  net_hosts_strip > "$tmp"
  net_hosts_write "$tmp"
  rm -f "$tmp"
}

# net_down: every namespace and link net_up made (a namespace's processes
# must have ended first: down.sh stops them).
net_down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^weft-(cp|node-[0-9]+)$' || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip route show | awk '/^10\.78\.[0-9]+\.0\/24 via/ {print $1}' | while read -r r; do ip route del "$r" 2>/dev/null || true; done
  ip link del "$net_bridge" 2>/dev/null || true
  # Pods' namespaces that containerd made and, its tasks killed rather than
  # stopped, left behind: those no process holds any more.
  for ns in $(ip netns list 2>/dev/null | awk '/^cni-/ {print $1}'); do
    [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && ip netns del "$ns" 2>/dev/null || true
  done
}
