#!/usr/bin/env bash
# Build Argo Workflows' workflow-controller and argoexec from the Go module proxy, outside the
# clone, and print the directory holding both static binaries.
#
#   hack/compare/build-argo.sh            build (or reuse) ARGO_VERSION, print the bin directory
#
# The module zip the proxy serves lacks workflow/executor/osspecific/signal_linux.go, so argoexec
# does not compile on linux as served. The build copies the module into the cache, restores that
# file from the darwin one (the same syscalls exist on linux) and builds there, with Argo's own
# go.mod and go.sum. Nothing of Argo's code enters this repository.
set -euo pipefail

ARGO_MODULE=github.com/argoproj/argo-workflows/v4
ARGO_VERSION=${ARGO_VERSION:-v4.0.5}
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}
WORK=$CACHE_DIR/compare/argo-$ARGO_VERSION
BIN=$WORK/bin

if [ -x "$BIN/workflow-controller" ] && [ -x "$BIN/argoexec" ]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$WORK" "$BIN"
src=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "$ARGO_MODULE@$ARGO_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "build-argo: could not download $ARGO_MODULE@$ARGO_VERSION" >&2; exit 1; }
rm -rf "$WORK/src"
cp -r "$src" "$WORK/src"
chmod -R u+w "$WORK/src"
osd=$WORK/src/workflow/executor/osspecific
if [ ! -f "$osd/signal_linux.go" ]; then
  sed 's/^\/\/go:build .*$/\/\/go:build linux/' "$osd/signal_darwin.go" >"$osd/signal_linux.go"
fi
cd "$WORK/src"
export CGO_ENABLED=0
start=$SECONDS
go build -trimpath -ldflags "-s -w" -o "$BIN/workflow-controller.tmp" ./cmd/workflow-controller
go build -trimpath -ldflags "-s -w" -o "$BIN/argoexec.tmp" ./cmd/argoexec
mv "$BIN/workflow-controller.tmp" "$BIN/workflow-controller"
mv "$BIN/argoexec.tmp" "$BIN/argoexec"
echo "build-argo: built $ARGO_VERSION in $((SECONDS - start)) s" >&2
echo "$BIN"
