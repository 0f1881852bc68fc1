#!/usr/bin/env bash
# Builds netshift's binaries into DIR (default bin/), static, as the images
# carry them: netshift as a lab build (-tags lab: the lab, its stand-in
# network plugin and the agent's test hooks; the product build is the same
# command without the tag), netshift-cni, and the lab's pause program.
# `netshift lab up` builds its node images from the binaries beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin}
mkdir -p "$out"
export CGO_ENABLED=0
flags=(-trimpath -ldflags "-s -w")
go build "${flags[@]}" -tags lab -o "$out/netshift" ./cmd/netshift
go build "${flags[@]}" -o "$out/netshift-cni" ./cmd/netshift-cni
go build "${flags[@]}" -o "$out/netshift-pause" ./internal/images/pause
