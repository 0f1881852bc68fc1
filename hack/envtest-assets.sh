#!/usr/bin/env bash
# Builds the real kube-apiserver, etcd and kubectl that the integration tests
# and the lab run, and the kubelet, kube-controller-manager and kube-scheduler
# that make the lab's nodes real Kubernetes nodes, from the Go module proxy (no
# prebuilt binaries can be downloaded here). The result is cached in a directory keyed by the hash of
# hack/envtest-assets/go.{mod,sum}; a second run only prints that directory.
#
# Usage: hack/envtest-assets.sh            -> builds if needed, prints the directory for KUBEBUILDER_ASSETS
#        hack/envtest-assets.sh --cached-only -> prints it only if already built (exit 1 otherwise)
#        NETSHIFT_ASSETS_ROOT=/dir hack/... -> cache somewhere else
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src="$here/envtest-assets"
k8s_version=v1.36.3
root=${NETSHIFT_ASSETS_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/netshift/envtest}
key=$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)
out="$root/$k8s_version-$key"

binaries=(kube-apiserver:k8s.io/kubernetes/cmd/kube-apiserver
          etcd:go.etcd.io/etcd/server/v3
          kubectl:k8s.io/kubernetes/cmd/kubectl
          kube-scheduler:k8s.io/kubernetes/cmd/kube-scheduler
          kube-controller-manager:k8s.io/kubernetes/cmd/kube-controller-manager
          kube-proxy:k8s.io/kubernetes/cmd/kube-proxy
          kubelet:k8s.io/kubernetes/cmd/kubelet)
built=1
for target in "${binaries[@]}"; do
  [[ -x "$out/${target%%:*}" ]] || built=
done
if [[ -n "$built" ]]; then
  echo "$out"
  exit 0
fi
if [[ "${1:-}" == "--cached-only" ]]; then
  echo "not built yet: run $0" >&2
  exit 1
fi

mkdir -p "$out.tmp"
ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$k8s_version \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=36 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"

cd "$src"
# One go build for all: the packages they share are loaded once and the
# binaries link side by side (each is named after its package's directory).
pkgs=()
for target in "${binaries[@]}"; do pkgs+=("${target#*:}"); done
start=$(date +%s)
echo "building ${#pkgs[@]} binaries: ${pkgs[*]} ..." >&2
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" "${pkgs[@]}"
mv "$out.tmp/server" "$out.tmp/etcd"   # go.etcd.io/etcd/server/v3
echo "built them in $(( $(date +%s) - start )) s" >&2
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$out"
