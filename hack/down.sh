#!/usr/bin/env bash
# Undoes `make run`: on the local cluster, stops it; on another cluster, uninstalls the chart
# and the sample Scene (the CRDs stay, as Helm keeps them, and with them any Runs).
set -euo pipefail
cd "$(dirname "$0")/.."
# kubectl from PATH, or the one the local cluster builds.
command -v kubectl >/dev/null || PATH="$(hack/k8s-binaries.sh cluster):$PATH"
NAMESPACE=${ERGON_NAMESPACE:-ergon-system}
if [ -n "${KUBECONFIG:-}" ] && [ "$KUBECONFIG" != "$(hack/local-cluster.sh kubeconfig 2>/dev/null)" ] &&
  kubectl version --request-timeout=5s >/dev/null 2>&1; then
  kubectl delete --ignore-not-found -f config/samples/run/hello.yaml
  make -s helm
  bin/helm uninstall ergon --namespace "$NAMESPACE" --ignore-not-found
else
  hack/local-cluster.sh down
fi
