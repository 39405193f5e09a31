#!/usr/bin/env bash
# Prepares a cluster for the e2e tier and prints its kubeconfig path: the cluster KUBECONFIG
# names when it is reachable, else the local single-node cluster, brought up. On the local
# cluster it also builds and imports the manager image. Then it installs (or upgrades) the
# chart, with the web console as `make run` installs it, and waits for the manager, the console
# and its admission webhooks.
set -euo pipefail
cd "$(dirname "$0")/.."
# kubectl from PATH, or the one the local cluster builds.
command -v kubectl >/dev/null || PATH="$(hack/k8s-binaries.sh cluster):$PATH"
IMG=${IMG:-ergon/manager:dev}
NAMESPACE=${ERGON_NAMESPACE:-ergon-system}

if [ -z "${KUBECONFIG:-}" ] || ! kubectl version --request-timeout=5s >/dev/null 2>&1; then
  KUBECONFIG=$(hack/local-cluster.sh up)
  export KUBECONFIG
  make -s load-image IMG="$IMG" >&2
fi
make -s helm >&2
bin/helm upgrade --install ergon charts/ergon --namespace "$NAMESPACE" --create-namespace \
  --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --set console.enabled=true --wait --timeout 5m >&2
hack/wait-webhooks.sh "$NAMESPACE" >&2
echo "$KUBECONFIG"
