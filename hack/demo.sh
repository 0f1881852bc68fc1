#!/usr/bin/env bash
# The main job: sets everything up on a fresh machine (as root), builds a
# 3-node lab (namespaces, Open vSwitch, VXLAN, a real API server, the netshift
# operator and agents), runs the traffic probe across it for 20 s and prints
# its report, then takes the lab down. `hack/demo.sh --keep` leaves it up.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=
[[ "${1:-}" == "--keep" ]] && keep=1
export PATH=/usr/local/go/bin:$PATH
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(hack/setup.sh)
mkdir -p bin
go build -o bin/netshift ./cmd/netshift
ns=bin/netshift
if [[ -z "$keep" ]]; then trap '$ns lab down --name demo >/dev/null 2>&1 || true' EXIT; fi

echo "== netshift lab up --name demo"
$ns lab up --name demo
echo
echo "== netshift lab status --name demo"
$ns lab status --name demo
echo
echo "== netshift status (the lab's API server, as the operator sees it)"
$ns --kubeconfig "$($ns lab kubeconfig --name demo)" status
echo
echo "== netshift lab probe --name demo --duration 20s"
echo "   (long-lived TCP every 5 ms, short-lived TCP, HTTPS with a 29 KB certificate, between pods on different nodes)"
$ns lab probe --name demo --duration 20s
if [[ -n "$keep" ]]; then
  echo
  echo "The lab is still up: export KUBECONFIG=\$($ns lab kubeconfig --name demo); $ns lab down --name demo removes it."
fi
