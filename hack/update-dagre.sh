#!/usr/bin/env bash
# Vendors the graph-layout library the web console draws Scenes with: @dagrejs/dagre from the
# npm registry, its minified browser build and licence, into internal/console/assets, where
# go:embed puts them into the console binary (no CDN, no network at run time).
# Usage: hack/update-dagre.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-3.1.3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@dagrejs/dagre@$version" >/dev/null && tar xzf dagrejs-dagre-"$version".tgz)
cp "$tmp/package/dist/dagre.min.js" internal/console/assets/dagre.min.js
cp "$tmp/package/LICENSE" internal/console/assets/dagre.LICENSE.txt
echo "vendored @dagrejs/dagre $version into internal/console/assets"
