#!/usr/bin/env bash
# Builds golangci-lint from the Go module proxy with this machine's Go (no
# prebuilt binary is downloaded), cached by version, and prints its path.
#
# Usage: hack/golangci-lint.sh             -> builds if needed, prints the binary's path
#        NETSHIFT_TOOLS_ROOT=/dir hack/... -> cache somewhere else
set -euo pipefail
version=v2.15.0
root=${NETSHIFT_TOOLS_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/netshift/tools}
out="$root/golangci-lint-$version"
if [[ ! -x "$out/golangci-lint" ]]; then
  echo "golangci-lint: building $version from the module proxy (about 3 minutes the first time)" >&2
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" GOFLAGS=-mod=mod go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version" >&2
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out/golangci-lint"
