#!/usr/bin/env bash
# The main job: sets everything up on a fresh machine and runs the parallel
# drain demo on a local real API server (see README). Extra arguments go to
# `netshift demo` (e.g. --hold 5s, --keep).
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(hack/setup.sh)
export PATH=/usr/local/go/bin:$PATH
mkdir -p bin
go build -o bin/netshift ./cmd/netshift
exec bin/netshift demo "$@"
