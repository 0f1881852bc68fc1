#!/usr/bin/env bash
# Prepares a fresh Debian machine (as root) for netshift: the Debian packages
# it needs, Go's modules, and the real kube-apiserver, etcd and kubectl built
# from the Go module proxy (cached; about 10 minutes the first time).
# Prints the assets directory last, for KUBEBUILDER_ASSETS.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for cmd in git:git curl:curl ip:iproute2; do
  command -v "${cmd%%:*}" >/dev/null 2>&1 || need_apt+=("${cmd#*:}")
done
if ((${#need_apt[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing ${need_apt[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${need_apt[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi
if ! command -v go >/dev/null 2>&1; then
  if [[ -x /usr/local/go/bin/go ]]; then
    export PATH=/usr/local/go/bin:$PATH
  else
    echo "setup: Go is not installed (need Go 1.26 or newer at /usr/local/go or on PATH)" >&2
    exit 1
  fi
fi
echo "setup: downloading Go modules" >&2
go mod download
start=$(date +%s)
assets=$(hack/envtest-assets.sh)
echo "setup: kube-apiserver, etcd and kubectl ready in $assets ($(( $(date +%s) - start )) s)" >&2
echo "$assets"
