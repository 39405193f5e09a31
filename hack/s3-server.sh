#!/usr/bin/env bash
# A real S3-compatible server for the artifact store's tests: SeaweedFS (Apache-2.0), its
# `weed mini` with the S3 gateway, built from the Go module proxy into a cache directory outside
# the clone (once: about ten minutes on two cores), run on loopback ports in a temporary
# directory, with one identity, so that unsigned requests are refused.
#
#   hack/s3-server.sh bin            build it if needed, print the binary's path
#   hack/s3-server.sh run CMD ARG... start it, run CMD with ERGON_TEST_S3_URL, AWS_ACCESS_KEY_ID
#                                    and AWS_SECRET_ACCESS_KEY set, stop it
set -euo pipefail

VERSION=${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
MODULE=github.com/seaweedfs/seaweedfs
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}
stamp=${VERSION#v0.0.0-}
BIN=$CACHE_DIR/seaweedfs-${stamp%%-*}/bin/weed

log() { printf '[s3-server %4ds] %s\n' "$SECONDS" "$*" >&2; }

build() {
  [[ -x $BIN ]] && return
  log "building SeaweedFS $VERSION from the module proxy (once)"
  local src scratch
  src=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -n $src ]] || { log "the module proxy did not give $MODULE@$VERSION"; exit 1; }
  # Its go.mod has a replace directive, which go install refuses: build inside a copy.
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  cp -r "$src/." "$scratch/" && chmod -R u+w "$scratch"
  mkdir -p "$(dirname "$BIN")"
  (cd "$scratch" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN.tmp" ./weed)
  mv "$BIN.tmp" "$BIN"
  log "built $BIN"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

run() {
  build
  # Not local: the EXIT trap reads them after this function returned.
  dir=$(mktemp -d)
  local s3 key=ergon-test secret
  secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  cat > "$dir/s3.json" <<JSON
{"identities": [{"name": "ergon", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
  s3=$(free_port)
  mkdir -p "$dir/data"
  "$BIN" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.port="$s3" -s3.config="$dir/s3.json" \
    -master.port="$(free_port)" -volume.port="$(free_port)" -filer.port="$(free_port)" \
    -webdav=false -admin.ui=false -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false \
    -bucket=ergon-test >"$dir/weed.log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 120); do
    if curl -s -o /dev/null "http://127.0.0.1:$s3/"; then break; fi
    kill -0 $pid 2>/dev/null || { cat "$dir/weed.log" >&2; log "SeaweedFS did not start"; exit 1; }
    sleep 0.5
  done
  log "S3 on 127.0.0.1:$s3, bucket ergon-test"
  ERGON_TEST_S3_URL="s3://ergon-test?region=us-east-1&endpoint=http://127.0.0.1:$s3&use_path_style=true" \
    AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret "$@"
}

case ${1:-} in
  bin) build; echo "$BIN" ;;
  run) shift; run "$@" ;;
  *) echo "usage: hack/s3-server.sh bin | run CMD [ARG...]" >&2; exit 2 ;;
esac
