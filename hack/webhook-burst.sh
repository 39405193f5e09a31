#!/usr/bin/env bash
# Measures the admission webhooks on a running cluster (the one KUBECONFIG names, or the local
# cluster): applies N Scenes (default 200) in 10 parallel kubectl streams, then reads how long
# the webhook calls took from two sides:
# - the API server's apiserver_admission_webhook_admission_duration_seconds, the time each
#   call took as the API server saw it, network and TLS included;
# - the manager's controller_runtime_webhook_latency_seconds, the time the handler took, read
#   from its HTTPS metrics endpoint with a token of a ServiceAccount bound to the metrics
#   reader role, as Prometheus would.
# Quantiles are the upper bounds of histogram buckets (as histogram_quantile without
# interpolation), over the calls of this burst only (the difference of two scrapes).
#
#   hack/webhook-burst.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-200}
streams=10
release=${RELEASE:-ergon}
system=${NAMESPACE:-ergon-system}
if [ -z "${KUBECONFIG:-}" ]; then
  KUBECONFIG=$(hack/local-cluster.sh kubeconfig)
  export KUBECONFIG
fi
ns="webhook-burst-$(date +%s)"
work=$(mktemp -d)
pf=""
cleanup() {
  [ -n "$pf" ] && kill "$pf" 2>/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  kubectl -n "$system" delete serviceaccount webhook-burst >/dev/null 2>&1 || true
  kubectl delete clusterrolebinding "webhook-burst-$ns" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

kubectl create namespace "$ns" >/dev/null
kubectl -n "$system" create serviceaccount webhook-burst >/dev/null
kubectl create clusterrolebinding "webhook-burst-$ns" --clusterrole="$release-metrics-reader" \
  --serviceaccount="$system:webhook-burst" >/dev/null
token=$(kubectl -n "$system" create token webhook-burst)
pod=$(kubectl -n "$system" get pods -l app.kubernetes.io/component=manager -o jsonpath='{.items[0].metadata.name}')
port=$((20000 + RANDOM % 10000))
kubectl -n "$system" port-forward "pod/$pod" "$port:8443" >/dev/null 2>&1 &
pf=$!
for _ in $(seq 50); do
  curl -ksf -o /dev/null -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" && break
  sleep 0.2
done

# scrape writes the cumulative buckets of the Scene webhook: "le count" lines.
scrape_apiserver() {
  kubectl get --raw /metrics | awk '/^apiserver_admission_webhook_admission_duration_seconds_bucket/ && /name="vscene.ergon.dev"/ {
    match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); sum[le] += $NF }
    /^apiserver_admission_webhook_admission_duration_seconds_sum/ && /name="vscene.ergon.dev"/ { total += $NF }
    END { for (l in sum) print l, sum[l]; print "sum", total + 0 }' | sort -g
}
scrape_manager() {
  curl -ksf -H "Authorization: Bearer $token" "https://127.0.0.1:$port/metrics" |
    awk '/^controller_runtime_webhook_latency_seconds_bucket/ && /validate-ergon-dev-v1alpha1-scene/ {
    match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); sum[le] += $NF }
    /^controller_runtime_webhook_latency_seconds_sum/ && /validate-ergon-dev-v1alpha1-scene/ { total += $NF }
    END { for (l in sum) print l, sum[l]; print "sum", total + 0 }' | sort -g
}
# quantiles prints the calls, mean, p50 and p99 of the difference of two scrapes.
quantiles() {
  awk 'NR == FNR { before[$1] = $2; next } { print $1, $2 - before[$1] }' "$1" "$2" | sort -g | awk '$1 == "sum" { seconds = $2; next } { k++; le[k] = $1; n[k] = $2 } END {
    total = n[k]
    for (i = 1; i <= k; i++) { if (!p50 && n[i] >= 0.5 * total) p50 = le[i]; if (!p99 && n[i] >= 0.99 * total) p99 = le[i] }
    printf "%d calls, mean %.1f ms, p50 <= %s s, p99 <= %s s\n", total, 1000 * seconds / total, p50, p99 }'
}

scrape_apiserver >"$work/api-before"
scrape_manager >"$work/mgr-before"
for i in $(seq 0 $((n - 1))); do
  cat <<YAML >>"$work/stream-$((i % streams)).yaml"
---
apiVersion: ergon.dev/v1alpha1
kind: Scene
metadata: {name: burst-$i, namespace: $ns}
spec:
  params: [{name: who, default: world}]
  steps:
  - {name: a, container: {image: busybox, command: [echo, "hello {{ .params.who }}"]}}
  - {name: b, dependsOn: [a], container: {image: busybox, command: [echo, "{{ .steps.a.output }}"]}}
  - {name: c, dependsOn: [a], when: "params.who != ''", container: {image: busybox, command: ['true']}}
  - {name: d, dependsOn: [b, c], container: {image: busybox, command: [echo, "{{ .steps.b.output }}"]}}
YAML
done
start=$(date +%s.%N)
pids=()
for f in "$work"/stream-*.yaml; do
  kubectl create -f "$f" >/dev/null &
  pids+=($!)
done
wait "${pids[@]}"
end=$(date +%s.%N)
scrape_apiserver >"$work/api-after"
scrape_manager >"$work/mgr-after"
echo "$n Scenes created in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s by $streams kubectl streams"
echo "as the API server saw the calls:   $(quantiles "$work/api-before" "$work/api-after")"
echo "as the manager's handler saw them: $(quantiles "$work/mgr-before" "$work/mgr-after")"
