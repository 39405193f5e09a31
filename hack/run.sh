#!/usr/bin/env bash
# The README's run command: runs Ergon and a sample Scene on the cluster KUBECONFIG names or,
# when none is reachable, on the local single-node cluster (hack/local-cluster.sh), which it
# brings up. `make down` undoes it.
#
# On your own cluster the manager image must be pullable: build and push it with
# `make docker-build docker-push IMG=registry.example/ergon/manager:TAG` and run
# `make run IMG=registry.example/ergon/manager:TAG`.
set -euo pipefail
cd "$(dirname "$0")/.."
# kubectl from PATH, or the one the local cluster builds.
command -v kubectl >/dev/null || PATH="$(hack/k8s-binaries.sh cluster):$PATH"

IMG=${IMG:-ergon/manager:dev}
rollout=()
NAMESPACE=${ERGON_NAMESPACE:-ergon-system}
say() { printf 'run: %s\n' "$*" >&2; }

if [ -n "${KUBECONFIG:-}" ] && kubectl version --request-timeout=5s >/dev/null 2>&1; then
  say "using the cluster KUBECONFIG names: $(kubectl config current-context)"
else
  say "no reachable cluster in KUBECONFIG: bringing up the local single-node cluster"
  KUBECONFIG=$(hack/local-cluster.sh up)
  export KUBECONFIG
  say "building the manager image and importing it into the local cluster"
  make -s load-image IMG="$IMG"
  # The tag stays the same from one build to the next: the image's digest on the pod makes the
  # Deployment roll when `make run` runs again after a change.
  rollout=(--set-string "podAnnotations.ergon\.dev/image-build=$(sha256sum bin/manager.tar | cut -c1-16)")
fi

make -s helm
# The archive's and the artifacts' default stores are on volumes of the default StorageClass;
# a cluster without one gets neither rather than a manager that waits for its volumes forever.
archive=()
if ! kubectl get storageclass -o jsonpath='{range .items[*]}{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}{"\n"}{end}' |
  grep -qx true; then
  say "the cluster has no default StorageClass: installing without the Run archive (docs/archive.md) and artifacts (docs/artifacts.md)"
  archive=(--set archive.store=none --set artifacts.store=none)
fi
say "installing the chart into namespace $NAMESPACE"
bin/helm upgrade --install ergon charts/ergon --namespace "$NAMESPACE" --create-namespace \
  --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --set console.enabled=true "${archive[@]}" "${rollout[@]}" \
  --wait --timeout 5m
say "waiting for the admission webhooks to answer"
hack/wait-webhooks.sh "$NAMESPACE"

say "applying the sample Scene and starting a Run"
# Unchanged on the local cluster too: it has the samples' public images under their names.
kubectl apply -f config/samples/run/hello.yaml
run=$(kubectl create -o name -f - <<'YAML'
apiVersion: ergon.dev/v1alpha1
kind: Run
metadata:
  generateName: hello-
spec:
  sceneRef: {name: hello}
  params: {who: Ergon}
YAML
)

# A person to log in to the web console as: a ServiceAccount of the sample's namespace that
# may edit Ergon's objects there and decide its Gates.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: console-user}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: console-user-edit}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: console-user}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: console-user-approver}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ergon-gate-approver}
subjects: [{kind: ServiceAccount, name: console-user}]
YAML

cat >&2 <<TXT

Ergon runs in namespace $NAMESPACE, and $run has started.
  export KUBECONFIG=$KUBECONFIG
  kubectl get runs -w                             # follow Runs
  kubectl wait --for=condition=Succeeded $run --timeout=2m
  kubectl get $run -o yaml                         # the whole story, with outputs
  kubectl get ergon                                # every Ergon object
  kubectl -n $NAMESPACE port-forward svc/ergon-console 8080:80   # the web console, at http://localhost:8080
  kubectl create token console-user                # the token to log in to it with
  make down                                        # remove it all again
TXT
