#!/usr/bin/env bash
# The end-to-end tier. On the cluster KUBECONFIG names, when it is reachable, it only runs the
# suite. Otherwise the suite brings up the local cluster, and this script brings it down
# afterwards and checks that the machine is as it was: no netns, mounts, iptables rules,
# sysctls or processes left behind.
#
# E2E_TAGS (default e2e) and E2E_FOCUS (a Ginkgo focus) select the specs: make test-chaos
# runs the chaos suite, whose specs carry the build tag chaos as well.
set -euo pipefail
cd "$(dirname "$0")/.."
tags=${E2E_TAGS:-e2e}
ginkgo_args=(-ginkgo.v)
[ -z "${E2E_FOCUS:-}" ] || ginkgo_args+=(-ginkgo.focus "$E2E_FOCUS")
# kubectl from PATH, or the one the local cluster builds.
command -v kubectl >/dev/null || PATH="$(hack/k8s-binaries.sh cluster):$PATH"

if [ -n "${KUBECONFIG:-}" ] && kubectl version --request-timeout=5s >/dev/null 2>&1; then
  exec go test -tags "$tags" ./test/e2e/... -timeout 30m -v -args "${ginkgo_args[@]}"
fi

state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
# A failed spec writes its Runs' state here (test/e2e/cluster_test.go); it is printed last.
export E2E_SUMMARY=$state/failed
hack/local-cluster.sh down >/dev/null 2>&1 || true
# Install the Debian packages and build the binaries first: installing packages changes the
# machine on purpose, and only what the cluster itself leaves behind is compared.
hack/local-cluster.sh build
hack/local-cluster.sh host-state >"$state/before"
unset KUBECONFIG
rc=0
go test -tags "$tags" ./test/e2e/... -timeout 30m -v -args "${ginkgo_args[@]}" || rc=$?
hack/local-cluster.sh down
hack/local-cluster.sh host-state >"$state/after"
if ! diff -u "$state/before" "$state/after"; then
  echo "e2e: the local cluster left the machine changed (above)" >&2
  rc=1
fi
if [ -s "$E2E_SUMMARY" ]; then
  echo "e2e: what the failed specs left (the full dump is in each spec's output):"
  cat "$E2E_SUMMARY"
fi
exit $rc
