#!/usr/bin/env bash
# Waits until the API server can call Ergon's admission webhooks: a server-side dry run of a Run
# passes both the mutating and the validating webhook. `helm --wait` returns when the manager is
# Ready, which is not yet enough: the webhook Service routes to it only once kube-proxy has seen
# its endpoints, and until then every create of an Ergon object is refused ("connection refused").
# Usage: hack/wait-webhooks.sh NAMESPACE [TIMEOUT_SECONDS]
set -euo pipefail
namespace=${1:?usage: hack/wait-webhooks.sh NAMESPACE [TIMEOUT_SECONDS]}
timeout=${2:-120}
probe() {
  kubectl create --dry-run=server --warnings-as-errors=false -o name -n "$namespace" -f - <<'YAML'
apiVersion: ergon.dev/v1alpha1
kind: Run
metadata:
  name: webhook-probe
spec:
  sceneRef: {name: webhook-probe}
YAML
}
deadline=$((SECONDS + timeout))
until err=$(probe 2>&1 >/dev/null); do
  if [ "$SECONDS" -ge "$deadline" ]; then
    printf 'wait-webhooks: the admission webhooks did not answer within %ss: %s\n' "$timeout" "$err" >&2
    exit 1
  fi
  sleep 1
done
