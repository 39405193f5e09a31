# Image URL to use all building/pushing image targets
IMG ?= ergon/manager:dev
# YEAR is the year in the boilerplate header of generated files; fixed so they never go stale.
YEAR ?= 2026

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set)
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif

# CONTAINER_TOOL defines the container tool to be used for building images.
# Be aware that the target commands are only tested with Docker which is
# scaffolded by default. However, you might want to replace it to use other
# tools. (i.e. podman)
CONTAINER_TOOL ?= docker

# Setting SHELL to bash allows bash commands to be executed by recipes.
# Options are set to exit when a recipe line exits non-zero or a piped command fails.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

# The help target prints out all targets with their descriptions organized
# beneath their categories. The categories are represented by '##@' and the
# target descriptions by '##'. The awk command is responsible for reading the
# entire set of makefiles included in this invocation, looking for lines of the
# file as xyz: ## something, and then pretty-format the target and help. Then,
# if there's a line with ##@ something, that gets pretty-printed as a category.
# More info on the usage of ANSI control characters for terminal formatting:
# https://en.wikipedia.org/wiki/ANSI_escape_code#SGR_parameters
# More info on the awk command:
# http://linuxcommand.org/lc3_adv_awk.php

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate WebhookConfiguration, ClusterRole and CustomResourceDefinition objects.
	"$(CONTROLLER_GEN)" rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	hack/sync-chart.sh

.PHONY: generate
generate: controller-gen ## Generate code containing DeepCopy, DeepCopyInto, and DeepCopyObject method implementations.
	"$(CONTROLLER_GEN)" object:headerFile="hack/boilerplate.go.txt",year=$(YEAR) paths="./..."

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against code.
	go vet ./...

# E2E=0 skips the end-to-end tier on machines that cannot run the local cluster.
E2E ?= 1

.PHONY: test
test: verify test-unit test-oldest ## Run every test tier: checks, unit and envtest (newest and oldest Kubernetes), then end to end (the README's test command).
ifeq ($(E2E),1)
	$(MAKE) test-e2e
endif

.PHONY: test-unit
test-unit: envtest-assets helm kustomize promtool ## Unit and envtest tests (a real kube-apiserver and etcd, a real PostgreSQL, promtool for the alerts), and hack/tools' own.
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" HELM="$(HELM)" KUSTOMIZE="$(KUSTOMIZE)" PROMTOOL="$(PROMTOOL)" \
		ERGON_POSTGRES_BIN="$$(hack/postgres.sh bin)" ERGON_REQUIRE_POSTGRES=1 go test ./... -timeout 30m -coverprofile cover.out
	cd hack/tools && go test ./...

# Supported Kubernetes versions: the three newest minors, K8S_OLDEST to the envtest default of
# hack/k8s-binaries.sh (README "Supported Kubernetes versions"; the chart's kubeVersion).
K8S_OLDEST ?= v1.35.4

.PHONY: test-oldest
# The specs that restart managers again and again test the engine, not the API server's
# version: the oldest Kubernetes runs every other spec.
OLDEST_SKIP = across restarts|Sharding|fails over

test-oldest: helm kustomize promtool ## The API, webhook, controller and manifest envtest suites again, on the oldest supported Kubernetes.
	assets="$$(K8S_VERSION=$(K8S_OLDEST) hack/k8s-binaries.sh envtest)"; \
	KUBEBUILDER_ASSETS="$$assets" HELM="$(HELM)" KUSTOMIZE="$(KUSTOMIZE)" PROMTOOL="$(PROMTOOL)" \
		go test ./api/... ./webhook/... ./test/manifests/... -timeout 30m && \
	KUBEBUILDER_ASSETS="$$assets" go test ./controllers/ -timeout 30m -args -ginkgo.skip "$(OLDEST_SKIP)"

.PHONY: test-e2e
test-e2e: ## End-to-end tests on the cluster KUBECONFIG names, or on the local cluster (brought up, then down).
	hack/e2e.sh

.PHONY: test-e2e-postgres
test-e2e-postgres: ## The archive's end-to-end specs with the chart's PostgreSQL archive: a PostgreSQL pod built from Debian's packages (not part of make test).
	ERGON_E2E_ARCHIVE=postgres E2E_FOCUS="archive|Run history" hack/e2e.sh

.PHONY: test-artifacts-s3
test-artifacts-s3: ## The artifact store's tests against a real S3 server: SeaweedFS built from the module proxy (once, about ten minutes), on loopback (not part of make test).
	hack/s3-server.sh run go test ./internal/artifacts/... -count=1 -run 'TestPut|TestPresignedS3' -v

.PHONY: test-fullsize
test-fullsize: ## The full-size run on the local cluster at the chart's default limits (docs/limits.md): 2,000 units of 512 KiB outputs beside a small Run in another namespace; prints etcd's growth (not part of make test).
	E2E_TAGS=e2e,fullsize E2E_FOCUS="Full size" hack/e2e.sh

.PHONY: test-chaos
test-chaos: ## The chaos suite on the local cluster (docs/chaos.md): 30 Runs, Triggers firing, while the manager, API server, etcd, kubelet, containerd and step pods are killed in turn; prints the recovery figures (not part of make test).
	@mkdir -p bin && rm -f bin/chaos-report.md
	E2E_TAGS=e2e,chaos E2E_FOCUS=Chaos CHAOS_REPORT="$(CURDIR)/bin/chaos-report.md" hack/e2e.sh; rc=$$?; \
		if [ -f bin/chaos-report.md ]; then cat bin/chaos-report.md; fi; exit $$rc

.PHONY: test-traces
test-traces: jaeger ## The traces e2e on the local cluster (docs/observability.md): Jaeger, built from source, receives the manager's OTLP traces; a Run with a Gate and an agent step, the manager restarted while the Gate waits, is read back from Jaeger's query API (not part of make test).
	hack/local-cluster.sh imagebuild --binary $(JAEGER) --entrypoint /jaeger --tag $(JAEGER_IMG) --out bin/jaeger.tar
	E2E_TAGS=e2e,traces E2E_FOCUS="trace in Jaeger" E2E_LOAD_IMAGES=bin/jaeger.tar E2E_JAEGER_IMAGE=$(JAEGER_IMG) hack/e2e.sh

.PHONY: verify
verify: fmt-check vet lint verify-generated chart-lint ## Static checks: gofmt, vet, golangci-lint, generated files, chart.

.PHONY: chart-lint
chart-lint: helm ## Lint the Helm chart and render it.
	"$(HELM)" lint charts/ergon
	"$(HELM)" template ergon charts/ergon --namespace ergon-system --kube-version 1.37.2 > /dev/null

.PHONY: fmt-check
fmt-check: ## Fail when a Go file is not gofmt-ed.
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: verify-generated
verify-generated: controller-gen ## Fail when generated files (CRDs, RBAC, deepcopy) are stale.
	@sum() { find api config charts -type f | sort | xargs sha256sum; }; before="$$(sum)"; \
	$(MAKE) -s manifests generate; after="$$(sum)"; \
	if [ "$$before" != "$$after" ]; then \
		echo "Generated files were stale; 'make manifests generate' changed:"; \
		diff <(echo "$$before") <(echo "$$after") || true; exit 1; fi

.PHONY: bench-authz
bench-authz: envtest-assets ## Measure what authorization at the effect adds to deps->pod latency: a 1,000-step fan-out, its leaves reading a Secret and reading nothing.
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -authz-rounds 4

.PHONY: bench-traces
bench-traces: envtest-assets ## Measure what exporting traces costs: a 1,000-step fan-out without and with an OTLP receiver, alternated (docs/observability.md).
	# Off, on, on, off, off, on: a drift of the machine over the runs weighs on both alike.
	for traces in false true true false false true; do \
		KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -trace-rounds 3 -traces=$$traces || exit 1; \
	done
	go test -run XXX -bench . -benchmem ./internal/tracing/

.PHONY: bench-console
bench-console: envtest-assets ## Measure the web console in headless Chromium (Debian's chromium): first paint of 1,000- and 10,000-step Runs, SSE latency, memory per stream.
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench/console

.PHONY: bench
bench: envtest-assets ## Measure the Run engine, the webhook Trigger endpoint, the Workspace controller and one manager at scale against a real API server.
	go test -run XXX -bench . -benchmem ./internal/...
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench/hooks
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench/workspaces
	$(MAKE) bench-scale

.PHONY: bench-fairshare
bench-fairshare: envtest-assets ## Fair share at the default step pod slot limits on envtest: a small Run's first step and 3-step chain beside busy tenants (docs/performance.md).
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -fair-share -fair-tenants 1 -fair-unit -1s
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -fair-share -fair-tenants 3 -fair-unit 5s

.PHONY: bench-shards
bench-shards: envtest-assets ## Run throughput of 1 and 2 manager shards (processes) on envtest (docs/performance.md).
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -shards 1,2

.PHONY: bench-fleet
bench-fleet: envtest-assets ## 10,000 Runs across 100 namespaces on 1 and 2 manager shards (envtest): peak heap, deps->pod p99, writes per step (docs/performance.md).
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -fleet 1,2

.PHONY: bench-workspace-ready
bench-workspace-ready: ## Workspace create -> Running p50/p99 on the cluster of $$KUBECONFIG with Ergon installed (a benchmark, not part of make test).
	go run ./test/bench/workspaceready $(BENCH_ARGS)

.PHONY: bench-workspace-pool
bench-workspace-pool: ## Workspace create -> Running p50/p99 from a WorkspacePool of 10 warm pods, on the cluster of $$KUBECONFIG (not part of make test).
	go run ./test/bench/workspaceready -pool 10 -workspaces 10 $(BENCH_ARGS)

.PHONY: bench-artifacts
bench-artifacts: ## Artifact MiB/s between steps against a bare pod's copy, and the manager's memory while 10 steps upload 100 MiB each, on the local cluster with Ergon installed (not part of make test).
	go run ./test/bench/artifacts $(BENCH_ARGS)

.PHONY: bench-workspace-wake
bench-workspace-wake: ## Run created -> bound step running, with the Workspace Running and woken from Idle, on the cluster of $$KUBECONFIG (about 5 minutes; not part of make test).
	go run ./test/bench/workspaceready -wake -workspaces 10 $(BENCH_ARGS)

.PHONY: bench-archive
bench-archive: ## The Run archive on SQLite: writes per second, then query latency (p50, p95) at 100,000 archived Runs (ERGON_BENCH_ARCHIVE_RUNS).
	go test ./internal/archive/ -run '^$$' -bench BenchmarkArchive -benchtime 400x -timeout 30m

.PHONY: bench-archive-engine
bench-archive-engine: envtest-assets ## What archiving every Run costs the engine: 10-step Runs on one manager process without and with a SQLite archive (steps/s, deps->pod, CPU).
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -archive-rounds 2

.PHONY: bench-archive-postgres
bench-archive-postgres: ## The same on PostgreSQL (Debian's binaries, found or unpacked by hack/postgres.sh).
	ERGON_POSTGRES_BIN="$$(hack/postgres.sh bin)" ERGON_BENCH_ARCHIVE_STORE=postgres \
		go test ./internal/archive/ -run '^$$' -bench BenchmarkArchive -benchtime 400x -timeout 30m

.PHONY: bench-scale
bench-scale: envtest-assets ## One manager process at scale on envtest: time and memory against Runs, 1,000 active Runs, 10,000 Gates, 1,000 Triggers (several minutes).
	KUBEBUILDER_ASSETS="$$(cat "$(LOCALBIN)/envtest-assets")" go run ./test/bench -scale

.PHONY: compare
compare: kustomize helm ## Ergon, Argo Workflows and bare pods side by side on the local cluster (hack/compare; a benchmark, not part of make test).
	KUSTOMIZE="$(KUSTOMIZE)" HELM="$(HELM)" LOCALBIN="$(LOCALBIN)" hack/compare/compare.sh

.PHONY: envtest-assets
envtest-assets: $(LOCALBIN) ## Build kube-apiserver and etcd for envtest (cached outside the clone).
	hack/k8s-binaries.sh envtest > "$(LOCALBIN)/envtest-assets"

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (the e2e suite included)
	"$(GOLANGCI_LINT)" run --build-tags e2e

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint linter and perform fixes
	"$(GOLANGCI_LINT)" run --fix

.PHONY: lint-config
lint-config: golangci-lint ## Verify golangci-lint linter configuration
	"$(GOLANGCI_LINT)" config verify

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager, entrypoint, artifact mover, agent runtime, web console and fake model binaries (static, as in the images).
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/manager ./cmd/manager
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/console ./cmd/console
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/entrypoint ./cmd/entrypoint
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/ergon-artifacts ./cmd/artifacts
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/agent ./cmd/agent
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/fakellm ./test/fakellm/cmd/fakellm

.PHONY: image
image: build ## Build the manager image without Docker, from the same static binaries, into bin/manager.tar (the web console, /console, is in it too).
	hack/local-cluster.sh imagebuild --binary bin/manager --entrypoint /manager \
		--add bin/entrypoint:/ergon-entrypoint --add bin/ergon-artifacts:/ergon-artifacts --add bin/agent:/ergon-agent \
		--add bin/console:/console --tag $(IMG) --out bin/manager.tar

# FAKELLM_IMG is the fake OpenAI-compatible server the end-to-end tests deploy.
FAKELLM_IMG ?= ergon/fakellm:dev

.PHONY: image-fakellm
image-fakellm: build ## Build the fake model server's image (test/fakellm) into bin/fakellm.tar.
	hack/local-cluster.sh imagebuild --binary bin/fakellm --entrypoint /fakellm --tag $(FAKELLM_IMG) --out bin/fakellm.tar

##@ kubectl plugin

# PLUGIN_VERSION is what kubectl ergon version prints; it names the release archives too.
PLUGIN_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PLUGIN_LDFLAGS = -s -w -X github.com/ergon-dev/ergon/internal/kubectlergon.Version=$(PLUGIN_VERSION)
# PLUGIN_PLATFORMS are the os/arch pairs plugin-release builds.
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
# PLUGIN_URL is where the release archives are published; the Krew manifest points there.
PLUGIN_URL ?= https://github.com/ergon-dev/ergon/releases/download/$(PLUGIN_VERSION)

.PHONY: plugin
plugin: ## Build the kubectl plugin, bin/kubectl-ergon (static); put it on your PATH to use kubectl ergon.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(PLUGIN_LDFLAGS)" -o bin/kubectl-ergon ./cmd/kubectl-ergon

.PHONY: plugin-release
plugin-release: ## Cross-compile kubectl-ergon into dist/ archives per platform, and write dist/ergon.yaml (Krew) with their sha256.
	PLUGIN_LDFLAGS="$(PLUGIN_LDFLAGS)" hack/plugin-release.sh "$(PLUGIN_VERSION)" "$(PLUGIN_URL)" $(PLUGIN_PLATFORMS)

##@ Local cluster

.PHONY: cluster-up
cluster-up: ## Start the local single-node cluster (built from source; see hack/cluster/README.md).
	hack/local-cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and leave the machine as it was.
	hack/local-cluster.sh down

.PHONY: cluster-status
cluster-status: ## Show the local cluster's components.
	hack/local-cluster.sh status

.PHONY: load-image
load-image: image image-fakellm ## Import the manager image and the fake model's into the local cluster.
	hack/local-cluster.sh load-image bin/manager.tar bin/fakellm.tar

.PHONY: run
run: ## Run Ergon and a sample Scene on the cluster KUBECONFIG names, or on the local cluster (the README's run command).
	hack/run.sh

.PHONY: down
down: ## Undo make run: stop the local cluster, or uninstall Ergon from yours.
	hack/down.sh

.PHONY: run-manager
run-manager: manifests generate fmt vet ## Run the manager from your host against KUBECONFIG.
	go run ./cmd/manager

# If you wish to build the manager image targeting other platforms you can use the --platform flag.
# (i.e. docker build --platform linux/arm64). However, you must enable docker buildKit for it.
# More info: https://docs.docker.com/develop/develop-images/build_enhancements/
# Override BASE_IMAGE to build from another registry, e.g.
# make docker-build IMG=<img> BASE_IMAGE=docker.io/library/golang:1.26
.PHONY: docker-build
docker-build: ## Build docker image with the manager.
	$(CONTAINER_TOOL) build $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push docker image with the manager.
	$(CONTAINER_TOOL) push ${IMG}

# PLATFORMS defines the target platforms for the manager image be built to provide support to multiple
# architectures. (i.e. make docker-buildx IMG=myregistry/mypoperator:0.0.1). To use this option you need to:
# - be able to use docker buildx. More info: https://docs.docker.com/build/buildx/
# - have enabled BuildKit. More info: https://docs.docker.com/develop/develop-images/build_enhancements/
# - be able to push the image to your registry (i.e. if you do not set a valid value via IMG=<myregistry/image:<tag>> then the export will fail)
# To adequately provide solutions that are compatible with multiple platforms, you should consider using this option.
PLATFORMS ?= linux/arm64,linux/amd64,linux/s390x,linux/ppc64le
.PHONY: docker-buildx
docker-buildx: ## Build and push docker image for the manager for cross-platform support
	# copy existing Dockerfile and insert --platform=${BUILDPLATFORM} into Dockerfile.cross, and preserve the original Dockerfile
	sed -e '1 s/\(^FROM\)/FROM --platform=\$$\{BUILDPLATFORM\}/; t' -e ' 1,// s//FROM --platform=\$$\{BUILDPLATFORM\}/' Dockerfile > Dockerfile.cross
	- $(CONTAINER_TOOL) buildx create --name ergon-builder
	$(CONTAINER_TOOL) buildx use ergon-builder
	- $(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) $(if $(BASE_IMAGE),--build-arg BASE_IMAGE=$(BASE_IMAGE)) --tag ${IMG} -f Dockerfile.cross .
	- $(CONTAINER_TOOL) buildx rm ergon-builder
	rm Dockerfile.cross

.PHONY: build-installer
build-installer: manifests generate kustomize ## Generate a consolidated YAML with CRDs and deployment.
	mkdir -p dist
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install CRDs into the K8s cluster specified in ~/.kube/config.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" apply -f -; else echo "No CRDs to install; skipping."; fi

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall CRDs from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	@out="$$( "$(KUSTOMIZE)" build config/crd 2>/dev/null || true )"; \
	if [ -n "$$out" ]; then echo "$$out" | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -; else echo "No CRDs to delete; skipping."; fi

.PHONY: deploy
deploy: manifests kustomize ## Deploy controller to the K8s cluster specified in ~/.kube/config.
	cd config/manager && "$(KUSTOMIZE)" edit set image controller=${IMG}
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" apply -f -

.PHONY: undeploy
undeploy: kustomize ## Undeploy controller from the K8s cluster specified in ~/.kube/config. Call with ignore-not-found=true to ignore resource not found errors during deletion.
	"$(KUSTOMIZE)" build config/default | "$(KUBECTL)" delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies

## Location to install dependencies to
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p "$(LOCALBIN)"

## Tool Binaries
KUBECTL ?= kubectl
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT = $(LOCALBIN)/golangci-lint
HELM ?= $(LOCALBIN)/helm
PROMTOOL ?= $(LOCALBIN)/promtool

## Tool Versions
KUSTOMIZE_VERSION ?= v5.8.1
CONTROLLER_TOOLS_VERSION ?= v0.23.0

GOLANGCI_LINT_VERSION ?= v2.13.1
HELM_VERSION ?= v3.22.0
# promtool of Prometheus 3.16.0 (its module's versions are v0.3XX.Y for Prometheus 3.XX.Y).
PROMTOOL_VERSION ?= v0.316.0
.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Download kustomize locally if necessary.
$(KUSTOMIZE): $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Download controller-gen locally if necessary.
$(CONTROLLER_GEN): $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: helm
helm: $(HELM) ## Build helm locally if necessary.
$(HELM): $(LOCALBIN)
	$(call go-install-tool,$(HELM),helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Download golangci-lint locally if necessary.
$(GOLANGCI_LINT): $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

# JAEGER is Jaeger all in one, at the version hack/jaeger/go.mod pins (cold build: about 13
# minutes on two cores, so only make test-traces builds it); JAEGER_IMG its image.
JAEGER ?= $(LOCALBIN)/jaeger
JAEGER_IMG ?= ergon/jaeger:dev
.PHONY: jaeger
jaeger: $(JAEGER) ## Build Jaeger (OTLP receiver, memory store, query API) from hack/jaeger, for make test-traces.
$(JAEGER): hack/jaeger/go.mod | $(LOCALBIN)
	cd hack/jaeger && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$(JAEGER)" github.com/jaegertracing/jaeger/cmd/jaeger

.PHONY: promtool
promtool: $(PROMTOOL) ## Build Prometheus' promtool, for the chart's alert rule tests.
# Without Prometheus' service discovery plugins (cloud SDKs), which promtool's rule tests need
# none of: a cold build takes a few minutes rather than many.
$(PROMTOOL): export GOFLAGS = -tags=remove_all_sd
$(PROMTOOL): $(LOCALBIN)
	$(call go-install-tool,$(PROMTOOL),github.com/prometheus/prometheus/cmd/promtool,$(PROMTOOL_VERSION))

# go-install-tool will 'go install' any package with custom target and name of binary, if it doesn't exist
# $1 - target path with name of binary
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(readlink -- "$(1)" 2>/dev/null)" = "$(1)-$(3)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Downloading $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" go install $${package} ;\
mv "$(LOCALBIN)/$$(basename "$(1)")" "$(1)-$(3)" ;\
} ;\
ln -sf "$$(realpath "$(1)-$(3)")" "$(1)"
endef
