#!/usr/bin/env bash
# Builds netshift's binaries into DIR (default bin/), static, as the images
# carry them: netshift (the product: operator, agent, CLI) and, a hard link to
# it, kubectl-netshift (the same binary as a kubectl plugin), netshift-cni,
# netshift-lab (the same command built with -tags lab: plus the lab, its
# stand-in network plugin, the demo, the benchmarks and the agent's test
# hooks), the lab's pause program and the lab's guest's answering program.
# `netshift-lab lab up` builds its node images from the binaries beside it,
# with itself as the image's netshift; `lab migrate --vm qemu` its guest image.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin}
mkdir -p "$out"
export CGO_ENABLED=0
# -buildvcs=auto: `netshift version` names the commit when built from a checkout.
flags=(-trimpath -buildvcs=auto -ldflags "-s -w")
go build "${flags[@]}" -o "$out/netshift" ./cmd/netshift
ln -f "$out/netshift" "$out/kubectl-netshift" # kubectl runs it as `kubectl netshift`
go build "${flags[@]}" -tags lab -o "$out/netshift-lab" ./cmd/netshift
go build "${flags[@]}" -o "$out/netshift-cni" ./cmd/netshift-cni
go build "${flags[@]}" -o "$out/netshift-pause" ./internal/images/pause
go build "${flags[@]}" -o "$out/netshift-guest-echo" ./internal/lab/vm/guest/echo
