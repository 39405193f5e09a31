#!/usr/bin/env bash
# make compare: Ergon, Argo Workflows and bare pods side by side on the cluster KUBECONFIG names
# (the local cluster by default). Builds Argo's workflow-controller and argoexec from the Go
# module proxy (build-argo.sh), packs their images with the project's image builder, installs
# Argo next to Ergon (this worktree's build, helm upgrade of the release "ergon"), runs the
# workloads (hack/compare, its own Go module), prints the table, then uninstalls Argo and
# deletes the namespaces it made. A benchmark: never part of make test.
#
#   COMPARE_WORKLOADS   default fan-out-100,fan-out-500,chain-20,diamond-x50,outputs-10,chains-200x3
#                       (also chain-N-sleepMSms: each step sleeps MS milliseconds; chains-NxM: N
#                       Runs of an M-step chain started together)
#   COMPARE_ENGINES     default ergon,argo,bare (also bare-hardened, bare-emptydir, bare-volumes,
#                       bare-image, bare-ergon); Argo is built and installed only when named
#   COMPARE_REPEAT      runs of each workload by each engine (default 1; the order rotates)
#   COMPARE_TIMEOUT     the longest one workload may take (default 30m: Argo's fan-out-500)
#   COMPARE_ARGO_TUNED  true (default): Argo as its scaling advice tunes it (hack/compare/manifests.go,
#                       argoTuning); false: Argo as it comes
#   IMG                 the Ergon image to build and install (default a unique tag)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
export KUBECONFIG=${KUBECONFIG:-$(hack/local-cluster.sh kubeconfig)}
command -v kubectl >/dev/null || PATH="$(hack/k8s-binaries.sh cluster):$PATH"
LOCALBIN=${LOCALBIN:-$REPO/bin}
KUSTOMIZE=${KUSTOMIZE:-$LOCALBIN/kustomize}
HELM=${HELM:-$LOCALBIN/helm}
CACHE_DIR=${ERGON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ergon}/compare
ARGO_VERSION=${ARGO_VERSION:-v4.0.5}
IMG=${IMG:-ergon/manager:compare-$(date +%s)}
ARGO_CONTROLLER_IMG=ergon-compare/workflow-controller:$ARGO_VERSION
ARGO_EXEC_IMG=ergon-compare/argoexec:$ARGO_VERSION
ENGINES=${COMPARE_ENGINES:-ergon,argo,bare}
WORK=$(mktemp -d)
log() { echo "compare: $*" >&2; }

cleanup() {
  log "cleaning up"
  kubectl delete namespace -l compare.ergon.dev/run=true --wait=false >/dev/null 2>&1 || true
  if [ -s "$WORK/argo.yaml" ]; then
    kubectl delete -n argo -f "$WORK/argo.yaml" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  kubectl delete namespace argo --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ARGO=false
case ",$ENGINES," in *,argo,*) ARGO=true ;; esac
IMAGES=("$WORK/manager.tar")
if $ARGO; then
  log "building Argo Workflows $ARGO_VERSION from the Go module proxy"
  ARGO_BIN=$(ARGO_VERSION=$ARGO_VERSION hack/compare/build-argo.sh)
  ARGO_SRC=$(dirname "$ARGO_BIN")/src
  hack/local-cluster.sh imagebuild --binary "$ARGO_BIN/workflow-controller" --entrypoint /workflow-controller \
    --tag "$ARGO_CONTROLLER_IMG" --out "$WORK/workflow-controller.tar" >&2
  hack/local-cluster.sh imagebuild --binary "$ARGO_BIN/argoexec" --entrypoint /bin/argoexec \
    --tag "$ARGO_EXEC_IMG" --out "$WORK/argoexec.tar" >&2
  IMAGES+=("$WORK/workflow-controller.tar" "$WORK/argoexec.tar")
fi

log "building and installing Ergon as $IMG"
# The binaries and image of make image, without its code generation and vet.
for cmd in manager entrypoint agent; do
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$WORK/$cmd" "./cmd/$cmd"
done
hack/local-cluster.sh imagebuild --binary "$WORK/manager" --entrypoint /manager \
  --add "$WORK/entrypoint:/ergon-entrypoint" --add "$WORK/agent:/ergon-agent" --tag "$IMG" --out "$WORK/manager.tar" >&2
hack/local-cluster.sh load-image "${IMAGES[@]}" >&2
kubectl apply --server-side --force-conflicts -f charts/ergon/crds/ >/dev/null
"$HELM" upgrade --install ergon charts/ergon --namespace ergon-system --create-namespace \
  --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --wait --timeout 5m >&2
hack/wait-webhooks.sh ergon-system >&2

if $ARGO; then
  log "installing Argo Workflows next to it (namespace argo)"
  "$KUSTOMIZE" build "$ARGO_SRC/manifests/cluster-install" |
    (cd hack/compare && go run . argo-manifests -controller-image "$ARGO_CONTROLLER_IMG" -executor-image "$ARGO_EXEC_IMG" \
      -tuned="${COMPARE_ARGO_TUNED:-true}") \
    >"$WORK/argo.yaml"
  kubectl create namespace argo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply -n argo --server-side --force-conflicts -f "$WORK/argo.yaml" >/dev/null
  kubectl -n argo rollout status deployment/workflow-controller --timeout 5m >&2
fi

log "running: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
(cd hack/compare && go build -o "$WORK/compare" .)
"$WORK/compare" -workloads "${COMPARE_WORKLOADS:-fan-out-100,fan-out-500,chain-20,diamond-x50,outputs-10,chains-200x3}" \
  -engines "$ENGINES" -repeat "${COMPARE_REPEAT:-1}" -timeout "${COMPARE_TIMEOUT:-30m}" \
  -ergon-image "$IMG"
$ARGO || ARGO_VERSION="not run"
$ARGO && [ "${COMPARE_ARGO_TUNED:-true}" = true ] && ARGO_VERSION="$ARGO_VERSION (tuned)"
log "done: load average $(cut -d' ' -f1-3 /proc/loadavg); Argo $ARGO_VERSION, Ergon $(git rev-parse --short HEAD), Kubernetes $(kubectl version -o json | sed -n 's/.*"gitVersion": "\(.*\)".*/\1/p' | tail -1)"
