#!/usr/bin/env bash
# Cross-compiles kubectl-ergon (static, CGO_ENABLED=0) for each os/arch given, packs each into
# dist/kubectl-ergon_VERSION_OS_ARCH.tar.gz with the README, writes dist/SHA256SUMS, and
# writes dist/ergon.yaml, the Krew manifest of plugins/ergon.yaml with the version, the
# download URL and every archive's sha256 filled in. A platform not built keeps no entry.
# Usage: hack/plugin-release.sh VERSION URL os/arch...
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1 url=$2
shift 2
dist=dist
rm -rf "$dist" && mkdir -p "$dist"
manifest=$(cat plugins/ergon.yaml)
manifest=${manifest//'${VERSION}'/$version}
manifest=${manifest//'${URL}'/$url}
built=()
for platform in "$@"; do
  os=${platform%/*} arch=${platform#*/}
  name=kubectl-ergon_${version}_${os}_${arch}
  bin=kubectl-ergon
  [ "$os" = windows ] && bin=kubectl-ergon.exe
  mkdir -p "$dist/$name"
  echo "plugin-release: building $name" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "${PLUGIN_LDFLAGS:--s -w}" \
    -o "$dist/$name/$bin" ./cmd/kubectl-ergon
  cp README.md "$dist/$name/"
  tar -C "$dist/$name" -czf "$dist/$name.tar.gz" "$bin" README.md
  rm -rf "${dist:?}/$name"
  sum=$(sha256sum "$dist/$name.tar.gz" | cut -d' ' -f1)
  manifest=${manifest//"\${SHA256_${os}_${arch}}"/$sum}
  built+=("${os}_${arch}")
done
(cd "$dist" && sha256sum ./*.tar.gz > SHA256SUMS)
# Drop the entries of platforms not built: Krew refuses a manifest with an empty sha256.
echo "$manifest" | grep -v "^#" | awk '
  /^  - selector:/ { if (entry != "" && entry !~ /\$\{SHA256_/) printf "%s", entry; entry = $0 "\n"; next }
  entry != "" && /^  [^ -]|^[^ ]/ { if (entry !~ /\$\{SHA256_/) printf "%s", entry; entry = ""; print; next }
  entry != "" { entry = entry $0 "\n"; next }
  { print }
  END { if (entry != "" && entry !~ /\$\{SHA256_/) printf "%s", entry }' > "$dist/ergon.yaml"
echo "plugin-release: ${built[*]} in $dist/, Krew manifest $dist/ergon.yaml" >&2
