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
  # E2E_LOAD_IMAGES: more image archives a suite needs (make test-traces: Jaeger's).
  for archive in ${E2E_LOAD_IMAGES:-}; do
    hack/local-cluster.sh load-image "$archive" >&2
  done
fi
make -s helm >&2
# ERGON_E2E_ARCHIVE=postgres (make test-e2e-postgres) installs with the chart's PostgreSQL
# archive: a PostgreSQL server built from Debian's packages (hack/postgres-image.sh) runs in the
# namespace ergon-archive-db, and the manager reads its URL from a Secret. The default is
# the chart's default, SQLite.
archive_args=()
if [ "${ERGON_E2E_ARCHIVE:-sqlite}" = postgres ]; then
  db_ns=ergon-archive-db
  image=${POSTGRES_IMAGE:-ergon/postgres:dev}
  if [ -z "${POSTGRES_IMAGE:-}" ]; then
    hack/local-cluster.sh load-image "$(hack/postgres-image.sh "$image")" >&2
  fi
  kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f - >&2
  kubectl create namespace "$db_ns" --dry-run=client -o yaml | kubectl apply -f - >&2
  kubectl label namespace "$db_ns" pod-security.kubernetes.io/enforce=restricted --overwrite >&2
  password=$(kubectl -n "$db_ns" get secret postgres -o jsonpath='{.data.password}' 2>/dev/null | base64 -d || true)
  if [ -z "$password" ]; then
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    kubectl -n "$db_ns" create secret generic postgres --from-literal=password="$password" >&2
  fi
  kubectl -n "$NAMESPACE" create secret generic ergon-archive-url \
    --from-literal=url="postgres://ergon:$password@postgres.$db_ns.svc:5432/ergon?sslmode=disable" \
    --dry-run=client -o yaml | kubectl apply -f - >&2
  sed "s|IMAGE|$image|" hack/cluster/manifests/postgres.yaml | kubectl -n "$db_ns" apply -f - >&2
  kubectl -n "$db_ns" rollout status deployment/postgres --timeout 3m >&2
  archive_args=(--set archive.store=postgres --set archive.postgres.urlSecret.name=ergon-archive-url)
fi
bin/helm upgrade --install ergon charts/ergon --namespace "$NAMESPACE" --create-namespace \
  --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --set console.enabled=true \
  "${archive_args[@]}" --wait --timeout 5m >&2
hack/wait-webhooks.sh "$NAMESPACE" >&2
echo "$KUBECONFIG"
