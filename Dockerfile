# The netshift image for a registry: the same content the lab builds as
# netshift.io/netshift:lab (package internal/images), from a checkout:
#   docker build -t REGISTRY/netshift:TAG .
# Then point config/default at it (kustomize `images:`, as config/lab does).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/netshift ./cmd/netshift && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/netshift-cni ./cmd/netshift-cni

# netshift reaches OVSDB itself (libovsdb); the one OVS program it runs is
# ovs-ofctl, for a migrated VM's RARP (packet-out). A shell and nsenter for the
# node-restore command (util-linux is in the base image).
FROM debian:bookworm-slim
RUN apt-get update && \
    apt-get install -y --no-install-recommends openvswitch-common && \
    rm -rf /var/lib/apt/lists/*
COPY --from=build /out/netshift /out/netshift-cni /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/netshift"]
