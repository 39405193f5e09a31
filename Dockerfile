# The manager image: static binaries (manager, step entrypoint, agent runtime, web console) in a distroless,
# non-root image.
# Machines without a Docker engine build the same image with the scripts in hack/.
ARG BASE_IMAGE=golang:1.26
FROM ${BASE_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY webhook/ webhook/
COPY internal/ internal/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o entrypoint ./cmd/entrypoint && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o ergon-artifacts ./cmd/artifacts && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o agent ./cmd/agent && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o console ./cmd/console

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
# Step pods copy the entrypoint out of this image with an init container.
COPY --from=builder /workspace/entrypoint /ergon-entrypoint
COPY --from=builder /workspace/ergon-artifacts /ergon-artifacts
# Agent steps run the agent runtime from this image, under the entrypoint.
COPY --from=builder /workspace/agent /ergon-agent
# The web console's Deployment (console.enabled in the chart) runs /console from this image.
COPY --from=builder /workspace/console /console
USER 65532:65532

ENTRYPOINT ["/manager"]
