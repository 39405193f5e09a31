#!/usr/bin/env bash
# A real single-node Kubernetes cluster, built from source, inside a network namespace of its own.
#
#   hack/local-cluster.sh up                 build what is missing, start the cluster, wait until
#                                            it is usable, print the kubeconfig path
#   hack/local-cluster.sh down               stop everything by PID and leave the machine as it was
#   hack/local-cluster.sh status             each component's state (exit 0 only when all run)
#   hack/local-cluster.sh load-image TAR...  import docker-archive/OCI tarballs into the node
#   hack/local-cluster.sh imagebuild ARGS... run hack/tools/cmd/imagebuild (see its --help)
#   hack/local-cluster.sh kubectl ARGS...    kubectl against the cluster
#   hack/local-cluster.sh kubeconfig         print the kubeconfig path
#   hack/local-cluster.sh exec CMD ARGS...   run a host command inside the cluster's network
#                                            namespace (reach ClusterIPs and pods, e.g. curl)
#   hack/local-cluster.sh build              only build/fetch binaries and images (warms the cache)
#   hack/local-cluster.sh restart COMPONENT  kill -9 one component (etcd, kube-apiserver,
#                                            kubelet, containerd, ...) and start it again, as a
#                                            crash and its supervisor would (the chaos suite);
#                                            a component that is not running is only started
#   hack/local-cluster.sh kill-container ID  kill -9 every process of a container (its CRI id,
#                                            a pod's containerID without "containerd://"),
#                                            as the kernel's OOM killer or a crash would
#   hack/local-cluster.sh host-state         what the cluster may change on the host (diff it
#                                            before `up` and after `down`)
#
# What runs where:
#   - a network namespace ($ERGON_NETNS, default "ergon") holds etcd, kube-apiserver,
#     kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy,
#     kube-network-policies (which enforces NetworkPolicy) and every pod.
#     A veth pair with a /30 ($ERGON_LINK_NET, default 172.30.255.0/30) joins it to the host:
#     .1 on the host, .2 (the node IP, where the API server listens) in the namespace. Nothing
#     routes beyond that pair: no NAT, no forwarding on the host, no upstream DNS; unknown
#     destinations inside the namespace go to a sink device and are dropped.
#   - a private mount namespace (held by one "holder" process) for all of them: tmpfs over /run,
#     /var/log, /var/lib/cni and /var/lib/kubelet, and bind-mounted answers for the kernel
#     tunables the kubelet checks. Every mount the cluster makes lives and dies with that
#     namespace, and host sysctls are never written.
#   - cgroups under /ergon in each cgroup hierarchy: the components in /ergon/system, pods in
#     /ergon/kubepods. `down` ends exactly the processes in those cgroups, then removes them.
#
# Binaries: hack/k8s-binaries.sh (Kubernetes, etcd), containerd, local-path-provisioner and
# kube-network-policies from the Go module proxy, hack/tools (imagebuild, pause, coredns, clusterpki); all cached under
# $ERGON_CACHE_DIR (default ~/.cache/ergon) keyed by version. Debian packages are installed when
# missing. State, certificates, logs and the kubeconfig live in $ERGON_CLUSTER_DIR (default
# $ERGON_CACHE_DIR/cluster); logs are in its logs/ folder. ERGON_CLUSTER_PROFILING=true serves
# the API server's /debug/pprof (kubectl get --raw '/debug/pprof/profile?seconds=30'), to
# profile it under a benchmark; `restart kube-apiserver` applies it to a running cluster.
# ERGON_KUBELET_V sets the kubelet's log level (default 1; 4 logs each pod's volume waits,
# sandbox, container starts and PLEG events with their times); `restart kubelet` applies it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}
STATE=${ERGON_CLUSTER_DIR:-$CACHE_DIR/cluster}
NETNS=${ERGON_NETNS:-ergon}
LINK_NET=${ERGON_LINK_NET:-172.30.255.0/30}
NODE_NAME=${ERGON_NODE_NAME:-ergon-local}
CGROUP_NAME=${ERGON_CGROUP:-ergon}

# Kubernetes and etcd versions are hack/k8s-binaries.sh's (the same defaults and variables).
export K8S_VERSION=${K8S_VERSION:-v1.37.2}
export ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
NETPOL_VERSION=${NETPOL_VERSION:-v0.8.0}
COREDNS_VERSION=$(sed -n 's#^\s*github.com/coredns/coredns \(v[^ ]*\).*#\1#p' "$REPO/hack/tools/go.mod")

# Addresses inside the namespace. They never leave it, so they cannot clash with the host's.
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
CLUSTER_DNS=10.96.0.10
CLUSTER_DOMAIN=cluster.local

# Image tags of the cluster's own images (imagePullPolicy IfNotPresent: they are never pulled).
PAUSE_IMAGE=ergon/pause:dev
BUSYBOX_IMAGE=ergon/busybox:dev
# The cluster cannot reach any registry. The public images the samples name (config/samples)
# are further names of the busybox image, so that every sample runs here unchanged.
mapfile -t SAMPLE_IMAGES < <(sed -n 's/^[[:space:]-]*image:[[:space:]]*["'"'"']\{0,1\}\([^"'"'"'[:space:]#]*\).*/\1/p' \
  "$REPO"/config/samples/*.yaml "$REPO"/config/samples/*/*.yaml 2>/dev/null | sort -u)
COREDNS_IMAGE=ergon/coredns:$COREDNS_VERSION
LOCAL_PATH_IMAGE=ergon/local-path-provisioner:$LOCAL_PATH_VERSION

APT_PACKAGES=(iproute2 util-linux procps runc containernetworking-plugins iptables conntrack busybox-static
  ca-certificates)
CNI_BIN_DIR=/usr/lib/cni
# Paths the kubelet, containerd and the CNI plugins write to no matter their configuration
# (the kubelet's device-plugin socket, shim sockets, CNI's cache, container log links): each gets
# a tmpfs inside the cluster's mount namespace.
MASKED_DIRS=(/run /var/log /var/lib/cni /var/lib/kubelet)
# Kernel tunables the kubelet wants (it would write them): answered by bind-mounted files.
declare -A KUBELET_SYSCTLS=([vm/overcommit_memory]=1 [vm/panic_on_oom]=0 [kernel/panic]=10
  [kernel/panic_on_oops]=1 [kernel/keys/root_maxkeys]=1000000 [kernel/keys/root_maxbytes]=25000000)

PKI=$STATE/pki
RUN=$STATE/run
LOGS=$STATE/logs
KUBECONFIG_OUT=$STATE/kubeconfig
CONTAINERD_SOCK=$STATE/containerd.sock
VOLUME_DIR=$STATE/volumes
# Runtime data wiped by `down` (PKI, images and logs are kept).
RUNTIME_DIRS=(etcd containerd kubelet pod-logs volumes cni run config kube-cache sysctl)

# Components in start order; `down` stops them in reverse.
COMPONENTS=(holder etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy
  kube-network-policies)

export GOWORK=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=${GOTOOLCHAIN:-local}

T0=$SECONDS
log() { printf '[local-cluster %4ds] %s\n' "$((SECONDS - T0))" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

require_root() { [ "$(id -u)" = 0 ] || die "must run as root (network namespaces, cgroups, mounts)"; }

check_state_dir() {
  case "$STATE" in /*) ;; *) die "ERGON_CLUSTER_DIR must be an absolute path, got $STATE" ;; esac
  local d
  for d in "${MASKED_DIRS[@]}"; do
    case "$STATE/" in "$d"/*) die "the state dir $STATE cannot be under $d (a tmpfs for the cluster)" ;; esac
  done
  # A unix socket's path has at most 107 bytes.
  [ ${#CONTAINERD_SOCK} -lt 100 ] || die "the state dir path $STATE is too long for containerd's socket"
}

# --- addresses -------------------------------------------------------------------------------

link_addresses() {
  local base=${LINK_NET%/*} prefix=${LINK_NET#*/}
  [ "$prefix" = 30 ] || die "ERGON_LINK_NET must be a /30, got $LINK_NET"
  local a b c d
  IFS=. read -r a b c d <<<"$base"
  [ $((d % 4)) = 0 ] || die "ERGON_LINK_NET $LINK_NET is not a /30 network address"
  HOST_IP="$a.$b.$c.$((d + 1))"
  NODE_IP="$a.$b.$c.$((d + 2))"
  HOST_IF="${NETNS:0:10}-host"
  NS_IF="${NETNS:0:10}-node"
}
link_addresses

# --- packages and binaries -------------------------------------------------------------------

ensure_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
}

# with_lock NAME CMD...: runs CMD holding the cache's lock NAME (builds may run concurrently).
with_lock() {
  local lock=$CACHE_DIR/locks/$1
  shift
  mkdir -p "$(dirname "$lock")"
  local fd
  exec {fd}>"$lock"
  flock "$fd"
  local rc=0
  "$@" || rc=$?
  exec {fd}>&-
  return $rc
}

# go_build_from_proxy DIR MODULE@VERSION TAGS PKG...: builds PKGs of a published module into DIR
# from a throwaway wrapper module, the way hack/k8s-binaries.sh builds etcd.
go_build_from_proxy() {
  local bin=$1 modver=$2 tags=$3
  shift 3
  local work
  work=$(mktemp -d)
  printf 'module ergon.local/build\n\ngo 1.26\n' >"$work/go.mod"
  local gets=()
  for p in "$@"; do gets+=("$p@${modver#*@}"); done
  (cd "$work" && go get "${gets[@]}" >&2 &&
    CGO_ENABLED=0 go build -tags "$tags" -ldflags "-s -w" -o "$work/out/" "$@") || {
    rm -rf "$work"
    return 1
  }
  mkdir -p "$bin"
  for f in "$work"/out/*; do mv -f "$f" "$bin/"; done
  rm -rf "$work"
}

build_containerd() {
  local bin=$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin
  CONTAINERD_BIN=$bin
  [ -x "$bin/containerd" ] && [ -x "$bin/ctr" ] && [ -x "$bin/containerd-shim-runc-v2" ] && return 0
  log "containerd $CONTAINERD_VERSION: building containerd, ctr, containerd-shim-runc-v2 (about a minute)"
  local m=github.com/containerd/containerd/v2 start=$SECONDS
  go_build_from_proxy "$bin" "$m@$CONTAINERD_VERSION" "no_btrfs no_devmapper no_zfs" \
    "$m/cmd/containerd" "$m/cmd/ctr" "$m/cmd/containerd-shim-runc-v2"
  log "containerd $CONTAINERD_VERSION: built in $((SECONDS - start))s"
}

build_local_path() {
  local bin=$CACHE_DIR/local-path-provisioner-$LOCAL_PATH_VERSION/bin
  LOCAL_PATH_BIN=$bin/local-path-provisioner
  [ -x "$LOCAL_PATH_BIN" ] && return 0
  log "local-path-provisioner $LOCAL_PATH_VERSION: building (about two minutes)"
  local m=github.com/rancher/local-path-provisioner start=$SECONDS
  go_build_from_proxy "$bin" "$m@$LOCAL_PATH_VERSION" "" "$m"
  log "local-path-provisioner $LOCAL_PATH_VERSION: built in $((SECONDS - start))s"
}

# kube-network-policies (SIG Network's NetworkPolicy enforcer: it decides packets from an
# NFQUEUE) is a policy-only addition to the bridge CNI, which ignores NetworkPolicy.
build_netpol() {
  local bin=$CACHE_DIR/kube-network-policies-$NETPOL_VERSION/bin
  [ -x "$bin/kube-network-policies" ] && return 0
  log "kube-network-policies $NETPOL_VERSION: building (about two minutes)"
  local m=sigs.k8s.io/kube-network-policies start=$SECONDS
  go_build_from_proxy "$bin.tmp" "$m@$NETPOL_VERSION" "" "$m/cmd"
  mv -f "$bin.tmp/cmd" "$bin.tmp/kube-network-policies" && rm -rf "$bin" && mv "$bin.tmp" "$bin"
  log "kube-network-policies $NETPOL_VERSION: built in $((SECONDS - start))s"
}

# tools_hash: identifies the hack/tools sources and the Go toolchain.
tools_hash() {
  (
    cd "$REPO/hack/tools"
    find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 | sort -z | xargs -0 sha256sum
    go version
  ) | sha256sum | cut -c1-12
}

build_tools() {
  local hash
  hash=$(tools_hash)
  TOOLS_BIN=$CACHE_DIR/tools-$hash/bin
  [ -x "$TOOLS_BIN/imagebuild" ] && [ -x "$TOOLS_BIN/coredns" ] && return 0
  log "hack/tools: building imagebuild, pause, coredns, clusterpki"
  local start=$SECONDS tmp
  tmp=$(mktemp -d -p "$CACHE_DIR")
  (cd "$REPO/hack/tools" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$tmp/" ./cmd/...)
  mkdir -p "$(dirname "$TOOLS_BIN")"
  rm -rf "$TOOLS_BIN" && mv "$tmp" "$TOOLS_BIN"
  # Older builds of the tools are of no further use.
  for d in "$CACHE_DIR"/tools-*; do [ "$d" = "$CACHE_DIR/tools-$hash" ] || rm -rf "$d"; done
  log "hack/tools: built in $((SECONDS - start))s"
}

# Cold-build time of everything `build` makes, measured on a 2-core, 24 GiB machine busy with
# other work too, with empty caches (README, "What the first run costs").
COLD_BUILD="about 80 minutes, and up to 55 more for kube-network-policies"

build_binaries() {
  mkdir -p "$CACHE_DIR"
  local start=$SECONDS
  [ -x "$CACHE_DIR/kubernetes-$K8S_VERSION/bin/kubelet" ] && [ -x "$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin/containerd" ] &&
    [ -x "$CACHE_DIR/local-path-provisioner-$LOCAL_PATH_VERSION/bin/local-path-provisioner" ] &&
    [ -x "$CACHE_DIR/kube-network-policies-$NETPOL_VERSION/bin/kube-network-policies" ] ||
    log "cold build of the local cluster from source: $COLD_BUILD on 2 cores with empty caches (about 50 when envtest's kube-apiserver and etcd are built); cached in $CACHE_DIR afterwards"
  KUBE_BIN=$("$REPO/hack/k8s-binaries.sh" cluster)
  ETCD=$CACHE_DIR/etcd-$ETCD_VERSION/bin/etcd
  KUBECTL=$KUBE_BIN/kubectl
  with_lock "containerd-$CONTAINERD_VERSION" build_containerd
  CONTAINERD_BIN=$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin
  with_lock "local-path-provisioner-$LOCAL_PATH_VERSION" build_local_path
  LOCAL_PATH_BIN=$CACHE_DIR/local-path-provisioner-$LOCAL_PATH_VERSION/bin/local-path-provisioner
  with_lock "kube-network-policies-$NETPOL_VERSION" build_netpol
  NETPOL_BIN=$CACHE_DIR/kube-network-policies-$NETPOL_VERSION/bin/kube-network-policies
  with_lock tools build_tools
  TOOLS_BIN=$CACHE_DIR/tools-$(tools_hash)/bin
  log "binaries ready in $((SECONDS - start))s"
}

# locate_binaries: the paths build_binaries sets, without building (for down/status/load-image).
locate_binaries() {
  KUBE_BIN=$CACHE_DIR/kubernetes-$K8S_VERSION/bin
  KUBECTL=$KUBE_BIN/kubectl
  CONTAINERD_BIN=$CACHE_DIR/containerd-$CONTAINERD_VERSION/bin
}

# --- images ----------------------------------------------------------------------------------

build_images() {
  local bbver
  bbver=$(dpkg-query -W -f='${Version}' busybox-static)
  IMAGES_DIR=$CACHE_DIR/images-$(printf '%s\n' "$TOOLS_BIN" "$LOCAL_PATH_VERSION" "$bbver" \
    "$PAUSE_IMAGE $BUSYBOX_IMAGE $COREDNS_IMAGE $LOCAL_PATH_IMAGE" "${SAMPLE_IMAGES[*]}" | sha256sum | cut -c1-12)
  [ -f "$IMAGES_DIR/done" ] && return 0
  log "images: building $PAUSE_IMAGE $BUSYBOX_IMAGE $COREDNS_IMAGE $LOCAL_PATH_IMAGE"
  log "images: the samples' ${SAMPLE_IMAGES[*]} are further names of $BUSYBOX_IMAGE"
  local ib=$TOOLS_BIN/imagebuild start=$SECONDS
  rm -rf "$IMAGES_DIR" && mkdir -p "$IMAGES_DIR"
  "$ib" --binary "$TOOLS_BIN/pause" --entrypoint /pause --user 65535:65535 --ca-certs "" \
    --tag "$PAUSE_IMAGE" --out "$IMAGES_DIR/pause.tar"
  "$ib" --busybox /bin/busybox --tag "$BUSYBOX_IMAGE" "${SAMPLE_IMAGES[@]/#/--tag=}" \
    --out "$IMAGES_DIR/busybox.tar"
  "$ib" --binary "$TOOLS_BIN/coredns" --entrypoint /coredns --tag "$COREDNS_IMAGE" \
    --out "$IMAGES_DIR/coredns.tar"
  "$ib" --binary "$LOCAL_PATH_BIN" --entrypoint /local-path-provisioner --tag "$LOCAL_PATH_IMAGE" \
    --out "$IMAGES_DIR/local-path-provisioner.tar"
  for d in "$CACHE_DIR"/images-*; do [ "$d" = "$IMAGES_DIR" ] || rm -rf "$d"; done
  touch "$IMAGES_DIR/done"
  log "images: built in $((SECONDS - start))s"
}

ctr_() { "$CONTAINERD_BIN/ctr" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# load_images TAR...: imports images into the node's containerd (the CRI's k8s.io namespace).
load_images() {
  [ -S "$CONTAINERD_SOCK" ] || die "containerd is not running: run '$0 up' first"
  for t in "$@"; do
    [ -f "$t" ] || die "$t: no such file"
    local out
    if ! out=$(ctr_ images import --all-platforms "$t" 2>&1); then
      printf '%s\n' "$out" >&2
      die "could not import $t"
    fi
    log "imported $t"
  done
}

# --- state: pids -----------------------------------------------------------------------------

pid_of() { cat "$RUN/$1.pid" 2>/dev/null || true; }

# running PID: the process exists and is not a zombie waiting for its parent.
running() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# alive NAME: the recorded PID still runs the recorded executable.
alive() {
  local pid exe
  pid=$(pid_of "$1")
  [ -n "$pid" ] && running "$pid" || return 1
  exe=$(cat "$RUN/$1.exe" 2>/dev/null) || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]
}

# --- network namespace -----------------------------------------------------------------------

netns_exists() { [ -e "/run/netns/$NETNS" ]; }
in_netns() { nsenter --net="/run/netns/$NETNS" -- "$@"; }

setup_netns() {
  if ip -4 -o addr show | awk '{print $2, $4}' | grep -v "^$HOST_IF " | grep -q " ${LINK_NET%.*}\."; then
    ip -4 -o addr show | grep " ${LINK_NET%.*}\." >&2 || true
    die "the host already has an address near $LINK_NET; choose another /30 with ERGON_LINK_NET"
  fi
  log "network: namespace $NETNS, veth $HOST_IF ($HOST_IP) <-> $NS_IF ($NODE_IP)"
  # `ip netns add` makes /run/netns a mount point (and the folder) when they are not yet there:
  # remember, so that `down` can undo it.
  [ -d /run/netns ] || echo /run/netns >>"$STATE/created-dirs"
  mountpoint -q /run/netns || echo /run/netns >"$STATE/created-netns-mount"
  ip netns add "$NETNS"
  # IPv6 off in the namespace before any interface exists there: IPv4 only, no link-local chatter.
  in_netns sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NETNS"
  sysctl -q -w "net.ipv6.conf.$HOST_IF.disable_ipv6=1"
  ip addr add "$HOST_IP/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  in_netns ip link set lo up
  in_netns ip addr add "$NODE_IP/30" dev "$NS_IF"
  in_netns ip link set "$NS_IF" up
  # A default route into a bridge without ports (a sink: it drops all it is given): Service IPs
  # work from the node itself, and traffic to anywhere else dies inside the namespace.
  in_netns ip link add ergon-void type bridge
  in_netns ip link set ergon-void up
  in_netns ip route add default dev ergon-void
  # Pods talk to the node (API server, kubelet), never through the veth pair to the host.
  in_netns iptables -t raw -A PREROUTING -d "$HOST_IP/32" -j DROP
  in_netns iptables -t raw -A PREROUTING -i "$NS_IF" ! -d "$NODE_IP/32" -j DROP
}

teardown_netns() {
  if netns_exists; then
    log "network: deleting namespace $NETNS"
    ip netns del "$NETNS"
  fi
  # The host end of the veth pair goes with the namespace; make sure.
  for _ in $(seq 20); do ip link show "$HOST_IF" >/dev/null 2>&1 || break; sleep 0.1; done
  ! ip link show "$HOST_IF" >/dev/null 2>&1 || ip link del "$HOST_IF"
  if [ -f "$STATE/created-netns-mount" ]; then
    # -n: no record in /run/mount, which util-linux would otherwise create.
    if [ -z "$(ls -A /run/netns 2>/dev/null)" ] && mountpoint -q /run/netns; then umount -n /run/netns; fi
    rm -f "$STATE/created-netns-mount"
  fi
}

# --- cgroups ---------------------------------------------------------------------------------

# cgroup_mounts: the mount point of every cgroup v1 hierarchy (or the v2 one).
cgroup_mounts() { awk '$9 == "cgroup" || $9 == "cgroup2" {print $5}' /proc/self/mountinfo; }

setup_cgroups() {
  log "cgroups: /$CGROUP_NAME/system for the components, /$CGROUP_NAME/kubepods for pods"
  local m d
  for m in $(cgroup_mounts); do
    for d in "$m/$CGROUP_NAME" "$m/$CGROUP_NAME/system"; do
      mkdir -p "$d"
      if [ -f "$d/cpuset.cpus" ] && [ -z "$(cat "$d/cpuset.cpus")" ]; then
        cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
        cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
      fi
    done
  done
}

# cgroup_pids: every process in the cluster's cgroups.
cgroup_pids() {
  local m
  for m in $(cgroup_mounts); do
    [ -d "$m/$CGROUP_NAME" ] || continue
    find "$m/$CGROUP_NAME" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}

kill_cgroup_pids() {
  local pids
  for _ in $(seq 50); do
    pids=$(cgroup_pids)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2206
    ENDED_PIDS+=($pids)
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  die "processes still in /$CGROUP_NAME cgroups: $(cgroup_pids | tr '\n' ' ')"
}

teardown_cgroups() {
  local m
  for m in $(cgroup_mounts); do
    [ -d "$m/$CGROUP_NAME" ] || continue
    for _ in $(seq 50); do
      find "$m/$CGROUP_NAME" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$m/$CGROUP_NAME" ] || break
      sleep 0.1
    done
    [ ! -d "$m/$CGROUP_NAME" ] || die "could not remove cgroup $m/$CGROUP_NAME"
  done
}

# --- the mount namespace holder and component processes ---------------------------------------

# start NAME BINARY ARGS...: starts BINARY in the cluster's cgroups, network namespace and mount
# namespace, in a session of its own, logging to $LOGS/NAME.log, and records its PID.
start() {
  local name=$1 exe=$2
  shift 2
  local mnt=()
  [ "$name" = holder ] || mnt=(--mount="/proc/$(pid_of holder)/ns/mnt")
  log "starting $name"
  (
    for m in $(cgroup_mounts); do echo "$BASHPID" >"$m/$CGROUP_NAME/system/cgroup.procs"; done
    export PATH="$CONTAINERD_BIN:$PATH"
    exec setsid nsenter --net="/run/netns/$NETNS" "${mnt[@]}" -- "$exe" "$@"
  ) >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  readlink -f "$exe" >"$RUN/$name.exe"
}

# PIDs that `down` ended: it waits until they are gone from the process table.
ENDED_PIDS=()

# wait_reaped: processes ended by `down` are the children of PID 1 (their starter exited), which
# reaps them in its own time; `down` returns once they are gone, so that `ps` tells the truth.
wait_reaped() {
  local p left
  for _ in $(seq 150); do
    left=""
    for p in "${ENDED_PIDS[@]}"; do [ ! -d "/proc/$p" ] || left+=" $p"; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  log "still in the process table (exited, not yet reaped by PID 1):$left"
}

# stop_all SECONDS NAME...: SIGTERM to each recorded PID, SIGKILL to those still running after
# SECONDS. The cluster's data is thrown away after this, so no component needs a long grace.
stop_all() {
  local grace=$1 name pid pids=()
  shift
  for name in "$@"; do
    if alive "$name"; then
      pid=$(pid_of "$name")
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid:$name")
      ENDED_PIDS+=("$pid")
    fi
  done
  for _ in $(seq $((grace * 10))); do
    local left=0 p
    for p in "${pids[@]}"; do running "${p%%:*}" && left=1; done
    [ $left = 1 ] || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do
    if running "${p%%:*}"; then
      log "${p#*:} did not stop in ${grace}s: SIGKILL"
      kill -KILL "${p%%:*}" 2>/dev/null || true
    fi
  done
  for name in "$@"; do rm -f "$RUN/$name.pid"; done
}

# The holder is the first process of the cluster's mount namespace; it prepares the namespace
# and then sleeps. Everything else joins its namespace.
start_holder() {
  mkdir -p "$STATE/sysctl"
  local setup=$STATE/config/holder.sh
  {
    # mount -n: util-linux would otherwise keep records in the host's /run/mount.
    echo 'set -eu'
    for d in "${MASKED_DIRS[@]}"; do echo "mount -n -t tmpfs -o mode=0755,size=512m ergon-cluster $d"; done
    echo 'mkdir -p /run/lock'
    for k in "${!KUBELET_SYSCTLS[@]}"; do
      local f=$STATE/sysctl/${k//\//.}
      echo "${KUBELET_SYSCTLS[$k]}" >"$f"
      echo "mount -n --bind $f /proc/sys/$k"
    done
    # Shared within this namespace only (it is a private copy), so pods can use mount propagation.
    echo 'mount -n --make-rshared /'
    echo 'exec sleep infinity'
  } >"$setup"
  start holder /usr/bin/unshare --mount --propagation private /bin/sh "$setup"
  for _ in $(seq 50); do
    local pid
    pid=$(pid_of holder)
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v sleep)")" ]; then
      readlink -f "$(command -v sleep)" >"$RUN/holder.exe"
      return 0
    fi
    sleep 0.1
  done
  cat "$LOGS/holder.log" >&2
  die "the mount namespace holder did not start"
}

# Directories masked by a tmpfs must exist on the host; remember the ones made here, so that
# `down` removes them again.
ensure_mountpoints() {
  for d in "${MASKED_DIRS[@]}"; do
    if [ ! -d "$d" ]; then
      mkdir -p "$d"
      echo "$d" >>"$STATE/created-dirs"
    fi
  done
}

# --- configuration ---------------------------------------------------------------------------

write_pki() {
  log "certificates: $PKI"
  "$TOOLS_BIN/clusterpki" --dir "$PKI" --node "$NODE_NAME" --node-ip "$NODE_IP" \
    --service-ip "$KUBERNETES_SVC_IP" --cluster-name "ergon-local"
  cp "$PKI/admin.kubeconfig" "$KUBECONFIG_OUT.tmp" && mv "$KUBECONFIG_OUT.tmp" "$KUBECONFIG_OUT"
}

write_configs() {
  local c=$STATE/config
  mkdir -p "$c" "$STATE/cni/net.d" "$STATE/cni/ipam" "$STATE/pod-logs" "$VOLUME_DIR" \
    "$STATE/containerd/opt"

  cat >"$c/containerd.toml" <<EOF
version = 3
root = "$STATE/containerd/root"
state = "/run/containerd"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins.'io.containerd.internal.v1.opt']
  path = "$STATE/containerd/opt"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$STATE/containerd/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  netns_mounts_under_state_dir = true
  # Machines like this one deny CAP_SYS_RESOURCE even to root, so no process may lower its
  # oom_score_adj (the kubelet asks -998 for sandboxes): keep the lower bound at containerd's own.
  restrict_oom_score_adj = true
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$CNI_BIN_DIR"]
    conf_dir = "$STATE/cni/net.d"

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF

  # Pods on one bridge; no masquerading: pod traffic never leaves the namespace.
  cat >"$STATE/cni/net.d/10-ergon.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ergon",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "ergon-br0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

  cat >"$c/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_NAME
failCgroupV1: false
failSwapOn: false
clusterDNS: [$CLUSTER_DNS]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: ""
podLogsDir: $STATE/pod-logs
rotateCertificates: false
serializeImagePulls: false
# Images are imported, never pulled: never collect them, evict only when really short.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
nodeStatusUpdateFrequency: 5s
logging: {format: text}
EOF

  cat >"$c/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $PKI/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: $CLUSTER_CIDR
detectLocalMode: ClusterCIDR
nodePortAddresses: [$NODE_IP/32]
iptables:
  localhostNodePorts: false
# 0: leave the conntrack table size and timeouts as the kernel has them.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# --- components ------------------------------------------------------------------------------

start_etcd() {
  start etcd "$ETCD" --name "$NODE_NAME" --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --listen-metrics-urls "" \
    --log-level warn
  wait_for "etcd" 30 in_netns bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'
}

start_apiserver() {
  start kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 \
    --bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port=6443 \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --client-ca-file="$PKI/ca.crt" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --requestheader-client-ca-file="$PKI/ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
    --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" \
    --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true \
    --profiling="${ERGON_CLUSTER_PROFILING:-false}" \
    --v=1
  wait_for "kube-apiserver /readyz" 90 kc get --raw /readyz
}

start_controller_manager() {
  local kc=$PKI/kube-controller-manager.kubeconfig
  start kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --leader-elect=false \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --root-ca-file="$PKI/ca.crt" --service-account-private-key-file="$PKI/sa.key" \
    --use-service-account-credentials=true \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --profiling=false --v=1
}

start_scheduler() {
  local kc=$PKI/kube-scheduler.kubeconfig
  start kube-scheduler "$KUBE_BIN/kube-scheduler" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false --v=1
}

start_containerd() {
  start containerd "$CONTAINERD_BIN/containerd" --config "$STATE/config/containerd.toml"
  wait_for "containerd" 30 ctr_ version
  load_images "$IMAGES_DIR"/*.tar
}

start_kubelet() {
  start kubelet "$KUBE_BIN/kubelet" \
    --config="$STATE/config/kubelet.yaml" \
    --kubeconfig="$PKI/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" \
    --volume-plugin-dir="$STATE/kubelet/volume-plugins" \
    --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_IP" \
    --v="${ERGON_KUBELET_V:-1}"
}

start_kube_proxy() {
  start kube-proxy "$KUBE_BIN/kube-proxy" --config="$STATE/config/kube-proxy.yaml" --v=1
}

# NetworkPolicy is enforced by kube-network-policies, in the node's network namespace like
# kube-proxy: the first packet of each new connection from or to a pod goes to an NFQUEUE,
# where it decides the packet against the policies and drops what they do not allow. Its own
# nftables rules cannot load here (kernels without CONFIG_NFT_QUEUE, like this project's CI
# machines, have no nftables "queue" expression); it listens on the queue all the same, and
# this script's iptables rules (xt NFQUEUE) fill it: new connections forwarded from or to a
# pod (pod to pod, pod to a Service's pods; bridged ones too, br_netfilter is on) and new
# connections from pods to the node itself (the API server and the kubelet listen on the
# node's address), so that egress policies cover those too. Traffic the node starts (kubelet
# probes, the API server calling webhooks) is not judged, as upstream. --queue-bypass: while
# the enforcer is down, packets pass unjudged rather than every pod losing its network.
# It reads its credentials where a pod finds them (rest.InClusterConfig): a token of its
# ServiceAccount (hack/cluster/manifests/network-policies.yaml, RBAC to read pods,
# namespaces, nodes and policies) under /run/secrets in the cluster's mount namespace.
NETPOL_QUEUE=100

# netpol_rule CHAIN -I|-A MATCH...: adds one NFQUEUE rule once.
netpol_rule() {
  local chain=$1 how=$2
  shift 2
  local rule=(-m conntrack --ctstate NEW "$@" -m comment --comment "ergon: NetworkPolicy, decided by kube-network-policies"
    -j NFQUEUE --queue-num "$NETPOL_QUEUE" --queue-bypass)
  in_netns iptables -C "$chain" "${rule[@]}" 2>/dev/null || in_netns iptables "$how" "$chain" "${rule[@]}"
}

start_netpol() {
  kc apply -f "$REPO/hack/cluster/manifests/network-policies.yaml" >&2
  local sa=$STATE/run/serviceaccount
  rm -rf "$sa" && mkdir -m 0700 -p "$sa"
  kc -n kube-system create token kube-network-policies --duration=8760h >"$sa/token"
  cp "$PKI/ca.crt" "$sa/ca.crt"
  echo kube-system >"$sa/namespace"
  nsenter --mount="/proc/$(pid_of holder)/ns/mnt" -- sh -c \
    "mkdir -p /run/secrets/kubernetes.io && rm -rf /run/secrets/kubernetes.io/serviceaccount &&
     cp -a '$sa' /run/secrets/kubernetes.io/serviceaccount"
  (
    export KUBERNETES_SERVICE_HOST=$NODE_IP KUBERNETES_SERVICE_PORT=6443
    start kube-network-policies "$NETPOL_BIN" --hostname-override="$NODE_NAME" --nfqueue-id="$NETPOL_QUEUE" \
      --disable-nri --netfilter-bug-1766-fix=false --metrics-bind-address=127.0.0.1:9080 --v=1
  )
  wait_for "kube-network-policies on queue $NETPOL_QUEUE" 60 netpol_ready
  # Ahead of kube-proxy's FORWARD rules, which accept some new connections (masqueraded ones).
  netpol_rule FORWARD -I -d "$CLUSTER_CIDR"
  netpol_rule FORWARD -I -s "$CLUSTER_CIDR"
  netpol_rule INPUT -A -s "$CLUSTER_CIDR"
}

# netpol_ready: the enforcer listens on its queue (the namespace's nfnetlink_queue lists it).
netpol_ready() { in_netns awk -v q="$NETPOL_QUEUE" '$1 == q {found = 1} END {exit !found}' /proc/net/netfilter/nfnetlink_queue; }

# --- readiness -------------------------------------------------------------------------------

kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" --cache-dir "$STATE/kube-cache" "$@"; }

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
  local what=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timed out after ${timeout}s waiting for $what; last attempt said:"
      "$@" >&2 || true
      return 1
    fi
    sleep 0.5
  done
  log "$what: ready"
}

render() {
  sed -e "s#@CLUSTER_DOMAIN@#$CLUSTER_DOMAIN#g" -e "s#@CLUSTER_DNS@#$CLUSTER_DNS#g" \
    -e "s#@COREDNS_IMAGE@#$COREDNS_IMAGE#g" -e "s#@LOCAL_PATH_IMAGE@#$LOCAL_PATH_IMAGE#g" \
    -e "s#@BUSYBOX_IMAGE@#$BUSYBOX_IMAGE#g" -e "s#@VOLUME_DIR@#$VOLUME_DIR#g" "$1"
}

deploy_addons() {
  log "addons: CoreDNS and local-path-provisioner"
  render "$REPO/hack/cluster/manifests/coredns.yaml" | kc apply -f - >&2
  render "$REPO/hack/cluster/manifests/local-path.yaml" | kc apply -f - >&2
}

has_default_sa() { kc -n default get serviceaccount default && kc -n default get configmap kube-root-ca.crt; }

wait_usable() {
  wait_for "node $NODE_NAME registered" 60 kc get node "$NODE_NAME"
  kc wait --for=condition=Ready "node/$NODE_NAME" --timeout=120s >&2
  wait_for "default ServiceAccount and kube-root-ca.crt" 60 has_default_sa
  kc -n kube-system rollout status deployment/coredns --timeout=120s >&2
  kc -n local-path-storage rollout status deployment/local-path-provisioner --timeout=120s >&2
  smoke_test
}

# smoke_test: a pod runs to completion and resolves a Service name through the cluster DNS. The
# pod retries for a while: kube-proxy programs the kube-dns Service a moment after CoreDNS is
# Ready, and pods that `up` has waited for must find it working.
smoke_test() {
  local pod=ergon-smoke-test phase=""
  kc -n default delete pod "$pod" --ignore-not-found --wait=true >/dev/null
  kc -n default apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
    - name: test
      image: $BUSYBOX_IMAGE
      imagePullPolicy: IfNotPresent
      command: [sh, -c, 'for i in \$(seq 60); do nslookup kubernetes.default.svc.$CLUSTER_DOMAIN && exit 0; sleep 1; done; exit 1']
      securityContext:
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL]}
        seccompProfile: {type: RuntimeDefault}
EOF
  local deadline=$((SECONDS + 90))
  while [ $SECONDS -lt $deadline ]; do
    phase=$(kc -n default get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    [ "$phase" = Succeeded ] || [ "$phase" = Failed ] && break
    sleep 0.5
  done
  if [ "$phase" != Succeeded ]; then
    kc -n default describe pod "$pod" >&2 || true
    kc -n default logs "$pod" >&2 || true
    die "the smoke-test pod did not succeed (phase: ${phase:-unknown})"
  fi
  kc -n default delete pod "$pod" --wait=false >/dev/null
  log "smoke test: a pod ran and resolved kubernetes.default.svc through the cluster DNS"
}

# host_state: what the cluster may change on the host, to compare before `up` and after `down`.
host_state() {
  echo "## ip netns"
  ip netns list
  echo "## links"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//'
  echo "## addresses"
  ip -o addr show | awk '{print $2, $3, $4}'
  echo "## routes"
  ip route show table all
  echo "## mounts"
  awk '{print $5, $9, $10}' /proc/self/mountinfo
  echo "## iptables"
  iptables-save 2>/dev/null | grep -v '^#' || true
  ip6tables-save 2>/dev/null | grep -v '^#' || true
  echo "## nft"
  nft list ruleset 2>/dev/null || true
  echo "## sysctls"
  sysctl net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.bridge.bridge-nf-call-iptables \
    vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes 2>&1
  echo "## cgroups"
  for m in $(cgroup_mounts); do ls -d "$m/$CGROUP_NAME" 2>/dev/null || true; done
  echo "## folders"
  for d in /run /var/lib /var/log /etc /opt; do
    echo "$d: $(find "$d" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')"
  done
  echo "## processes of the cluster (in a network namespace of their own or its cgroups)"
  local p exe hostnet
  hostnet=$(readlink /proc/self/ns/net)
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case "$exe" in
    "$CACHE_DIR"/* | */runc | */containerd-shim* | */pause | */sleep) ;;
    *) continue ;;
    esac
    if [ "$(readlink "$p/ns/net" 2>/dev/null)" != "$hostnet" ] || grep -q ":/$CGROUP_NAME/" "$p/cgroup" 2>/dev/null; then
      echo "${p#/proc/} $exe"
    fi
  done
  # Fixed ports only: listeners on ephemeral ports come and go with whatever else runs on
  # the machine (test servers on loopback), and no component of the cluster uses one.
  echo "## listening sockets (ports below the ephemeral range)"
  local lo
  lo=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range)
  ss -Hlntu | awk -v lo="$lo" '{n = split($5, a, ":"); if (a[n] + 0 < lo) print $1, $5}' | sort
}

# --- commands --------------------------------------------------------------------------------

all_alive() {
  for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done
}

cmd_build() {
  require_root
  ensure_packages
  build_binaries
  build_images
}

cmd_up() {
  require_root
  check_state_dir
  trap 'rc=$?; [ $rc = 0 ] || log "up failed (exit $rc): logs in $LOGS; \"$0 down\" cleans up"' EXIT
  local t_start=$SECONDS
  ensure_packages
  build_binaries
  build_images
  local t_built=$SECONDS
  if all_alive && netns_exists; then
    log "already running"
    wait_for "kube-apiserver /readyz" 30 kc get --raw /readyz
    wait_usable
    echo "$KUBECONFIG_OUT"
    return 0
  fi
  if netns_exists || [ -n "$(ls "$RUN"/*.pid 2>/dev/null)" ] || [ -n "$(cgroup_pids 2>/dev/null)" ]; then
    log "found the remains of an earlier cluster: cleaning them up first"
    cmd_down
  fi
  rm -rf "$LOGS.prev" && { [ ! -d "$LOGS" ] || mv "$LOGS" "$LOGS.prev"; }
  mkdir -p "$RUN" "$LOGS" "$STATE/config"
  write_pki
  write_configs
  ensure_mountpoints
  setup_netns
  setup_cgroups
  start_holder
  start_etcd
  start_apiserver
  start_controller_manager
  start_scheduler
  start_containerd
  start_kubelet
  start_kube_proxy
  start_netpol
  deploy_addons
  wait_usable
  log "up: binaries and images $((t_built - t_start))s, cluster $((SECONDS - t_built))s"
  log "kubeconfig: $KUBECONFIG_OUT   (export KUBECONFIG=$KUBECONFIG_OUT)"
  echo "$KUBECONFIG_OUT"
}

cmd_down() {
  require_root
  locate_binaries
  local i reverse=()
  # Components in reverse order, each by its recorded PID; then whatever is left in the
  # cluster's cgroups (pod processes, containerd's shims) gets SIGKILL, by PID.
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do reverse+=("${COMPONENTS[$i]}"); done
  stop_all 5 "${reverse[@]}"
  kill_cgroup_pids
  teardown_cgroups
  wait_reaped
  teardown_netns
  if [ -f "$STATE/created-dirs" ]; then
    while read -r d; do rmdir "$d" 2>/dev/null || log "left $d: not empty"; done < <(sort -ru "$STATE/created-dirs")
    rm -f "$STATE/created-dirs"
  fi
  # Nothing may be mounted below the state dir before its runtime data goes.
  if grep -qF " $STATE/" /proc/self/mountinfo; then
    grep -F " $STATE/" /proc/self/mountinfo >&2
    die "mounts remain below $STATE; not deleting its data"
  fi
  for d in "${RUNTIME_DIRS[@]}"; do rm -rf --one-file-system "${STATE:?}/$d"; done
  rm -f "$CONTAINERD_SOCK" "$CONTAINERD_SOCK.ttrpc"
  log "down: stopped and cleaned up (certificates, images and logs kept in $STATE)"
}

# cmd_restart NAME: SIGKILL to one component by its recorded PID, then the same start as `up`.
cmd_restart() {
  require_root
  local name=$1 pid
  case " ${COMPONENTS[*]} " in
  *" $name "*) [ "$name" != holder ] || die "the holder cannot restart: it owns the mount namespace" ;;
  *) die "unknown component $name; one of: ${COMPONENTS[*]}" ;;
  esac
  build_binaries >/dev/null
  build_images
  if alive "$name"; then
    pid=$(pid_of "$name")
    log "kill -9 $name (pid $pid)"
    kill -KILL "$pid"
    for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done
  else
    log "$name is not running: starting it"
  fi
  case "$name" in
  kube-apiserver) start_apiserver ;;
  kube-controller-manager) start_controller_manager ;;
  kube-scheduler) start_scheduler ;;
  kube-proxy) start_kube_proxy ;;
  kube-network-policies) start_netpol ;;
  *) "start_$name" ;;
  esac
}

# cmd_kill_container ID: SIGKILL to every process in the container's cgroups (the kubelet names
# them pod<uid>/<container id> below /$CGROUP_NAME/kubepods), by PID.
cmd_kill_container() {
  require_root
  local id=$1 m dirs=() pids
  [[ "$id" =~ ^[0-9a-f]{12,64}$ ]] || die "not a container id: $id"
  for m in $(cgroup_mounts); do
    [ -d "$m/$CGROUP_NAME/kubepods" ] || continue
    while IFS= read -r d; do dirs+=("$d"); done < <(find "$m/$CGROUP_NAME/kubepods" -type d -name "$id*")
  done
  [ ${#dirs[@]} -gt 0 ] || die "no container $id in /$CGROUP_NAME/kubepods"
  pids=$(cat "${dirs[@]/%//cgroup.procs}" 2>/dev/null | sort -un)
  [ -n "$pids" ] || die "container $id has no processes"
  log "kill -9 container ${id:0:12} (pids $(echo $pids))"
  # shellcheck disable=SC2086
  kill -KILL $pids
}

cmd_status() {
  locate_binaries
  local ok=0 c
  if netns_exists; then
    printf '%-24s %s\n' "network namespace" "$NETNS (host $HOST_IP, node $NODE_IP)"
  else
    printf '%-24s %s\n' "network namespace" "absent"
    ok=1
  fi
  for c in "${COMPONENTS[@]}"; do
    if alive "$c"; then
      printf '%-24s %s\n' "$c" "running (pid $(pid_of "$c"))"
    elif [ -f "$RUN/$c.pid" ]; then
      printf '%-24s %s\n' "$c" "DEAD (was pid $(pid_of "$c"); see $LOGS/$c.log)"
      ok=1
    else
      printf '%-24s %s\n' "$c" "stopped"
      ok=1
    fi
  done
  if [ $ok = 0 ] && [ -x "${KUBECTL:-}" ]; then
    if kc get --raw /readyz >/dev/null 2>&1; then
      printf '%-24s %s\n' "api server" "ready at https://$NODE_IP:6443"
      printf '%-24s %s\n' "node" "$(kc get node "$NODE_NAME" --no-headers 2>&1 | awk '{print $1, $2, $5}')"
      local n
      for n in kube-system/coredns local-path-storage/local-path-provisioner; do
        printf '%-24s %s\n' "${n#*/}" "$(kc -n "${n%/*}" get deployment "${n#*/}" --no-headers 2>&1 | awk '{print "ready " $2}')"
      done
    else
      printf '%-24s %s\n' "api server" "NOT READY"
      ok=1
    fi
  fi
  printf '%-24s %s\n' "kubeconfig" "$KUBECONFIG_OUT"
  printf '%-24s %s\n' "logs" "$LOGS"
  return $ok
}

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

main() {
  local cmd=${1:-}
  [ $# -eq 0 ] || shift
  case "$cmd" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  build) cmd_build ;;
  restart)
    [ $# -eq 1 ] || die "usage: $0 restart COMPONENT"
    cmd_restart "$1"
    ;;
  kill-container)
    [ $# -eq 1 ] || die "usage: $0 kill-container CONTAINER_ID"
    cmd_kill_container "$1"
    ;;
  kubeconfig) echo "$KUBECONFIG_OUT" ;;
  host-state) host_state ;;
  load-image | import)
    [ $# -gt 0 ] || die "usage: $0 load-image TARBALL..."
    locate_binaries
    load_images "$@"
    ;;
  imagebuild)
    with_lock tools build_tools
    exec "$CACHE_DIR/tools-$(tools_hash)/bin/imagebuild" "$@"
    ;;
  exec)
    # A command inside the cluster's network namespace, as a pod or node would run it.
    [ $# -gt 0 ] || die "usage: $0 exec COMMAND [ARG...]"
    netns_exists || die "the local cluster is not up"
    exec nsenter --net="/run/netns/$NETNS" -- "$@"
    ;;
  kubectl)
    locate_binaries
    exec "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" --cache-dir "$STATE/kube-cache" "$@"
    ;;
  *) usage ;;
  esac
}

main "$@"
