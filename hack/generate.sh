#!/usr/bin/env bash
# Regenerates deepcopy code and the CRDs under config/crd from api/.
set -euo pipefail
cd "$(dirname "$0")/.."
go tool controller-gen object paths=./api/... crd paths=./api/... output:crd:dir=config/crd
