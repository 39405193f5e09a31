#!/usr/bin/env bash
# Finds PostgreSQL server binaries for the archive's tests, and prints their directory (the
# one that holds initdb and postgres) on stdout.
#
#   hack/postgres.sh bin
#
# The machine's own Debian PostgreSQL is used when it is installed. Otherwise the Debian
# packages (the server and the libraries it needs that the machine lacks) are downloaded and
# unpacked with dpkg -x into a cache directory outside the clone, and a small wrapper runs
# each binary with the unpacked libraries; nothing is installed. The tests run the server as
# an unprivileged user on a Unix socket in a temporary directory (initdb refuses root), so it
# never listens on the network. ERGON_POSTGRES_UNPACK=1 unpacks even when the machine has one.
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}

log() { printf '[postgres] %s\n' "$*" >&2; }

if [[ ${1:-} != bin ]]; then
  echo "usage: hack/postgres.sh bin" >&2
  exit 2
fi

system=/usr/lib/postgresql/$PG_MAJOR/bin
if [[ -z ${ERGON_POSTGRES_UNPACK:-} && -x $system/initdb && -x $system/postgres ]]; then
  echo "$system"
  exit 0
fi

root=$CACHE_DIR/postgresql-$PG_MAJOR
if [[ -x $root/bin/initdb ]]; then
  echo "$root/bin"
  exit 0
fi

log "unpacking Debian's postgresql-$PG_MAJOR into $root (once)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/postgresql.lock"
flock 9
if [[ -x $root/bin/initdb ]]; then
  echo "$root/bin"
  exit 0
fi
# The server and every package it needs, recursively, that the machine does not have.
mapfile -t wanted < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "postgresql-$PG_MAJOR" | grep -E '^[a-z0-9]' | sort -u)
missing=("postgresql-$PG_MAJOR")
for p in "${wanted[@]}"; do
  [[ $p == "postgresql-$PG_MAJOR" ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
(cd "$scratch" && apt-get download "${missing[@]}" >/dev/null)
mkdir -p "$scratch/root"
for deb in "$scratch"/*.deb; do
  dpkg -x "$deb" "$scratch/root"
done
libs=$(find "$scratch/root" -name '*.so*' -printf '%h\n' | sort -u | sed "s|^$scratch/root|$root/files|" | paste -sd:)
mkdir -p "$scratch/out/bin"
mv "$scratch/root" "$scratch/out/files"
real=$root/files/usr/lib/postgresql/$PG_MAJOR
for b in "$scratch/out/files/usr/lib/postgresql/$PG_MAJOR/bin/"*; do
  name=$(basename "$b")
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s/bin/%s "$@"\n' \
    "$libs" "$real" "$name" >"$scratch/out/bin/$name"
  chmod 755 "$scratch/out/bin/$name"
done
[[ -x $scratch/out/bin/initdb ]] || { log "postgresql-$PG_MAJOR holds no initdb"; exit 1; }
chmod -R a+rX "$scratch/out"
rm -rf "$root"
mv "$scratch/out" "$root"
echo "$root/bin"
