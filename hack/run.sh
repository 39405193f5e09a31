#!/usr/bin/env bash
# The README's run command: installs Ergon's CRDs and the sample Scene on the cluster KUBECONFIG
# names. The local single-node cluster (the default when there is none) and the in-cluster
# manager arrive with the local-cluster change; until then this says so and stops.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! kubectl version --request-timeout=5s >/dev/null 2>&1; then
  echo "run: no reachable cluster in KUBECONFIG." >&2
  echo "run: the local single-node cluster is not part of Ergon yet; point KUBECONFIG at a cluster." >&2
  exit 1
fi
echo "run: installing the CRDs on $(kubectl config current-context)"
kubectl apply --server-side -f config/crd/bases
kubectl wait --for=condition=Established --timeout=60s -f config/crd/bases
echo "run: applying the sample Scene and Run"
kubectl apply -f config/samples/ergon_v1alpha1_scene.yaml -f config/samples/ergon_v1alpha1_run.yaml
echo "run: done. Watch: kubectl get ergon"
