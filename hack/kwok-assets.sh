#!/usr/bin/env bash
# Builds kwok, which keeps the simulated nodes of `netshift-lab scale` (their
# Node objects, leases and the pods bound to them) alive on a real API server,
# from the Go module proxy in a module of its own (`go install pkg@version`),
# so its Kubernetes libraries never meet netshift's, and puts beside it the
# stages kwok's module ships (stages/: what a node and a pod do, and when):
# nodes Ready at once with a lease kept fresh, pods running at once and gone
# when deleted. Cached by version; a second run only prints the binary's path.
#
# Usage: hack/kwok-assets.sh               -> builds if needed, prints the kwok binary's path
#        hack/kwok-assets.sh --cached-only -> prints it only if already built (exit 1 otherwise)
set -euo pipefail

version=v0.8.0
root=${NETSHIFT_ASSETS_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/netshift/kwok}
out="$root/$version"
if [[ -x "$out/kwok" && -d "$out/stages" ]]; then
  echo "$out/kwok"
  exit 0
fi
if [[ "${1:-}" == "--cached-only" ]]; then
  echo "kwok $version is not built yet: run $0" >&2
  exit 1
fi
mkdir -p "$out.tmp"
start=$(date +%s)
echo "building kwok $version ..." >&2
CGO_ENABLED=0 GOBIN="$out.tmp" GOFLAGS=-trimpath go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$version"
echo "built kwok in $(( $(date +%s) - start )) s" >&2
src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$version/kustomize/stage"
mkdir -p "$out.tmp/stages"
for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
             pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  cp "$src/$stage.yaml" "$out.tmp/stages/"
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out/kwok"
