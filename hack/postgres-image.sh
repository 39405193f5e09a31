#!/usr/bin/env bash
# Builds a PostgreSQL server image from Debian's packages, for the e2e tier's PostgreSQL archive
# (make test-e2e-postgres), and prints the path of its docker-archive tarball.
#
#   hack/postgres-image.sh [TAG]     (default ergon/postgres:dev)
#
# The server is the one hack/postgres.sh finds (the machine's Debian PostgreSQL, or Debian's
# packages unpacked with dpkg -x): its binaries and extensions, the shared libraries they load
# (as ldd resolves them), the time zones, and busybox for the entrypoint's shell, assembled by
# hack/tools' imagebuild. No registry and no Docker engine are involved. The image runs as
# 65532, initializes its data directory on first start from $POSTGRES_USER, $POSTGRES_PASSWORD
# and $POSTGRES_DB, and listens on 5432 with password (SCRAM) authentication.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=${1:-ergon/postgres:dev}
PG_MAJOR=${PG_MAJOR:-15}
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}
log() { printf '[postgres-image] %s\n' "$*" >&2; }

bin=$(PG_MAJOR=$PG_MAJOR hack/postgres.sh bin)
# The real server tree, and the library path of hack/postgres.sh's wrappers when it unpacked.
libpath=
if [[ $bin == /usr/lib/postgresql/$PG_MAJOR/bin ]]; then
  files=
else
  files=$(dirname "$bin")/files
  libpath=$(sed -n 's/^LD_LIBRARY_PATH=\([^$]*\)\${.*/\1/p' "$bin/postgres")
fi
server=$files/usr/lib/postgresql/$PG_MAJOR
share=$files/usr/share/postgresql/$PG_MAJOR
[[ -x $server/bin/postgres && -d $share ]] || { log "no PostgreSQL server under ${files:-/}"; exit 1; }

key=$(printf '%s\n' "$TAG" "$server" "$(stat -c %Y "$server/bin/postgres")" "$(sha256sum "$0")" | sha256sum | cut -c1-12)
out=$CACHE_DIR/postgres-image-$key/postgres.tar
if [[ -f $out ]]; then
  echo "$out"
  exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log "building $TAG from $server"
# The shared libraries every binary and extension loads, at the paths ldd resolves them to.
declare -A libs=()
while IFS= read -r -d '' f; do
  head -c4 "$f" | grep -q $'\x7fELF' || continue
  while read -r path; do
    [[ -n $path && -e $path ]] && libs[$path]=1
  done < <(LD_LIBRARY_PATH=$libpath ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
done < <(find "$server/bin" "$server/lib" -type f -print0)
args=()
for path in "${!libs[@]}"; do
  real=$(readlink -f "$path")
  # Unpacked libraries go where the loader looks for them in the image: the same directory
  # under /usr/lib, named as the binary asks.
  dst=$path
  [[ -n $files && $path == "$files"/* ]] && dst=${path#"$files"}
  args+=(--add "$real:$dst")
done

cat >"$scratch/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
postgres:x:65532:65532:PostgreSQL:/var/lib/postgresql:/bin/sh
PASSWD
cat >"$scratch/group" <<'GROUP'
root:x:0:
postgres:x:65532:
GROUP
cat >"$scratch/entrypoint" <<'ENTRY'
#!/bin/sh
# Initializes the data directory on first start, then runs the server in the foreground.
set -eu
export PATH=/usr/lib/postgresql/PG_MAJOR/bin:/bin
PGDATA=${PGDATA:-/var/lib/postgresql/data/pgdata}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
  umask 077
  printf '%s' "$POSTGRES_PASSWORD" >/tmp/pwfile
  initdb -D "$PGDATA" -U "${POSTGRES_USER:-ergon}" --pwfile=/tmp/pwfile --auth=scram-sha-256 \
    --encoding=UTF8 --locale=C >/dev/null
  rm -f /tmp/pwfile
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE ${POSTGRES_DB:-ergon};" | postgres --single -D "$PGDATA" postgres >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
ENTRY
sed -i "s/PG_MAJOR/$PG_MAJOR/" "$scratch/entrypoint"
chmod 755 "$scratch/entrypoint"

mkdir -p "$(dirname "$out")"
hack/local-cluster.sh imagebuild --busybox /bin/busybox --entrypoint /usr/local/bin/ergon-postgres --tag "$TAG" --ca-certs "" \
  --dir "$server:/usr/lib/postgresql/$PG_MAJOR" --dir "$share:/usr/share/postgresql/$PG_MAJOR" \
  --dir "/usr/share/zoneinfo:/usr/share/zoneinfo" \
  --add "$scratch/passwd:/etc/passwd:644" --add "$scratch/group:/etc/group:644" \
  --add "$scratch/entrypoint:/usr/local/bin/ergon-postgres:755" \
  "${args[@]}" --env "TZ=UTC" --env "PGDATA=/var/lib/postgresql/data/pgdata" \
  --user 65532:65532 --workdir /tmp \
  --out "$out.tmp"
mv "$out.tmp" "$out"
for d in "$CACHE_DIR"/postgres-image-*; do [[ $d == "$(dirname "$out")" ]] || rm -rf "$d"; done
log "built $(du -h "$out" | cut -f1) into $out"
echo "$out"
