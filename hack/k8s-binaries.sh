#!/usr/bin/env bash
# Builds pinned Kubernetes and etcd binaries from the Go module proxy, into a cache directory
# outside the clone keyed by version, so a second run costs nothing.
#
#   hack/k8s-binaries.sh envtest   kube-apiserver + etcd, for controller-runtime's envtest
#   hack/k8s-binaries.sh cluster   every binary the local single-node cluster needs, and kubectl
#
# It prints what it does on stderr, one line per component with the elapsed time, and, last, the
# directory that holds the binaries on stdout (KUBEBUILDER_ASSETS for envtest). Two runs at once
# are safe: each build holds a lock, and a binary appears in the cache only once it is complete.
# K8S_VERSION picks another Kubernetes release (the Makefile's test-oldest uses the oldest one
# Ergon supports); each version is cached on its own.
#
# Kubernetes is not meant to be consumed as a module: its go.mod replaces each k8s.io staging
# module with a directory of its own tree. A small wrapper module requires k8s.io/kubernetes
# and points each staging module at its published v0.Y.Z release instead.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}

export GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-local}

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

T0=$SECONDS
log() { printf '[k8s-binaries %4ds] %s\n' "$((SECONDS - T0))" "$*" >&2; }

# quiet CMD...: runs CMD with its output kept aside, shown only when it fails (go get prints a
# line per module).
quiet() {
  local out=$SCRATCH/quiet.log
  "$@" >"$out" 2>&1 || {
    cat "$out" >&2
    return 1
  }
}

# Cold-build times measured on a 2-core, 24 GiB machine that was busy with other work too, Go
# module cache empty (README, "What the first run costs").
COLD_ENVTEST="about 30 minutes"
COLD_CLUSTER="about 35 minutes (65 when kube-apiserver and etcd are not built yet)"


# with_lock FILE CMD...: runs CMD while holding an exclusive lock on FILE.
with_lock() {
  local lock=$1
  shift
  mkdir -p "$(dirname "$lock")"
  exec {fd}>"$lock"
  flock "$fd"
  "$@"
  local rc=$?
  exec {fd}>&-
  return $rc
}

# build_kubernetes DIR CMD...: builds k8s.io/kubernetes/cmd/CMD for each CMD missing from DIR.
build_kubernetes() {
  local bin=$1
  shift
  local missing=()
  for c in "$@"; do [ -x "$bin/$c" ] || missing+=("$c"); done
  if [ ${#missing[@]} -eq 0 ]; then
    log "kubernetes $K8S_VERSION: ${*} cached in $bin"
    return 0
  fi
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local staging="v0.${minor}.${K8S_VERSION##*.}"
  local work
  work=$(mktemp -d -p "$SCRATCH")

  log "kubernetes $K8S_VERSION: resolving the module graph (staging modules at $staging)"
  local kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module ergon.local/kubernetes-build"
    echo "go 1.26"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\t\1 => \1 '"$staging"'#p' "$kmod"
    echo ")"
  } >"$work/go.mod"

  local pkgs=()
  for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  (cd "$work" && quiet go get "${pkgs[@]/%/@$K8S_VERSION}")

  local vpkg=k8s.io/component-base/version
  local ldflags="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor"
  ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
  # One command at a time, for a progress line each; the packages they share are compiled once
  # (Go's build cache), so this costs no more than one go build of them all.
  mkdir -p "$work/out" "$bin"
  local i=0 start
  for c in "${missing[@]}"; do
    i=$((i + 1))
    start=$SECONDS
    log "kubernetes $K8S_VERSION: [$i/${#missing[@]}] building $c"
    (cd "$work" && go build -ldflags "$ldflags" -o "$work/out/$c" "k8s.io/kubernetes/cmd/$c")
    mv -f "$work/out/$c" "$bin/$c"
    log "kubernetes $K8S_VERSION: [$i/${#missing[@]}] $c built in $((SECONDS - start))s"
  done
}

# build_etcd DIR: builds etcd (a main that calls etcdmain.Main) into DIR.
build_etcd() {
  local bin=$1
  if [ -x "$bin/etcd" ]; then
    log "etcd $ETCD_VERSION: cached in $bin"
    return 0
  fi
  local work
  work=$(mktemp -d -p "$SCRATCH")
  cat >"$work/main.go" <<'EOF'
// Command etcd is etcd's own server main, built from its published module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  printf 'module ergon.local/etcd-build\n\ngo 1.26\n' >"$work/go.mod"
  log "etcd $ETCD_VERSION: building"
  local start=$SECONDS
  (cd "$work" && quiet go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && quiet go mod tidy &&
    go build -ldflags "-s -w" -o "$work/etcd" .)
  mkdir -p "$bin"
  mv -f "$work/etcd" "$bin/etcd"
  log "etcd $ETCD_VERSION: built in $((SECONDS - start))s"
}

main() {
  local mode=${1:-envtest}
  local kbin="$CACHE_DIR/kubernetes-$K8S_VERSION/bin"
  local ebin="$CACHE_DIR/etcd-$ETCD_VERSION/bin"
  local cmds
  case "$mode" in
  envtest) cmds=(kube-apiserver) ;;
  cluster) cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl) ;;
  *)
    echo "usage: $0 envtest|cluster" >&2
    exit 2
    ;;
  esac
  local c cold=false
  for c in "${cmds[@]}"; do [ -x "$kbin/$c" ] || cold=true; done
  [ -x "$ebin/etcd" ] || cold=true
  if $cold; then
    if [ "$mode" = envtest ]; then
      log "cold build of kube-apiserver $K8S_VERSION and etcd $ETCD_VERSION from source: $COLD_ENVTEST on 2 cores; cached in $CACHE_DIR afterwards (seconds)"
    else
      log "cold build of the cluster's Kubernetes $K8S_VERSION binaries: $COLD_CLUSTER on 2 cores; cached in $CACHE_DIR afterwards (seconds)"
    fi
  fi
  with_lock "$CACHE_DIR/locks/kubernetes-$K8S_VERSION" build_kubernetes "$kbin" "${cmds[@]}"
  with_lock "$CACHE_DIR/locks/etcd-$ETCD_VERSION" build_etcd "$ebin"

  # envtest wants kube-apiserver and etcd side by side in one directory.
  local assets="$CACHE_DIR/envtest-$K8S_VERSION-etcd-$ETCD_VERSION"
  mkdir -p "$assets"
  ln -sfn "$kbin/kube-apiserver" "$assets/kube-apiserver"
  ln -sfn "$ebin/etcd" "$assets/etcd"
  if [ "$mode" = envtest ]; then
    echo "$assets"
  else
    echo "$kbin"
  fi
}

main "$@"
