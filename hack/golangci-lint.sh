#!/usr/bin/env bash
# Builds golangci-lint from the Go module proxy with this machine's Go (no
# prebuilt binary is downloaded), cached by version, and prints its path.
#
# Usage: hack/golangci-lint.sh             -> builds if needed, prints the binary's path
#        hack/golangci-lint.sh --download  -> only downloads its modules (setup does, while
#                                             the cores build Kubernetes), unless it is built
#        NETSHIFT_TOOLS_ROOT=/dir hack/... -> cache somewhere else
set -euo pipefail
version=v2.15.0
root=${NETSHIFT_TOOLS_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/netshift/tools}
out="$root/golangci-lint-$version"
module="github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version"
if [[ ${1:-} == --download ]]; then
  # -n loads every package (downloading its module) and builds nothing.
  # Best effort: the build reports what went wrong.
  [[ -x "$out/golangci-lint" ]] || GOFLAGS=-mod=mod go install -n "$module" >/dev/null 2>&1 || true
  exit
fi
if [[ ! -x "$out/golangci-lint" ]]; then
  echo "golangci-lint: building $version from the module proxy (about 3 minutes the first time)" >&2
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" GOFLAGS=-mod=mod go install "$module" >&2
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out/golangci-lint"
