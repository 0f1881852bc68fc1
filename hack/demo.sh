#!/usr/bin/env bash
# The main job: sets everything up on a fresh machine (as root), builds a
# 3-node lab (namespaces, Open vSwitch, VXLAN, a real API server, the netshift
# operator and agents), starts the traffic probe, lowers the pod MTU by 100
# live while traffic flows, prints netshift status as the change rolls and
# the probe's report, then takes the lab down. `hack/demo.sh --keep` leaves it up.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=
[[ "${1:-}" == "--keep" ]] && keep=1
export PATH=/usr/local/go/bin:$PATH
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(hack/setup.sh)
mkdir -p bin
go build -tags lab -o bin/netshift ./cmd/netshift   # a lab build: the lab and its test hooks
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
kubeconfig=$($ns lab kubeconfig --name demo)
kubectl="$KUBEBUILDER_ASSETS/kubectl --kubeconfig $kubeconfig"
echo "== netshift lab probe start: long-lived TCP every 5 ms, short-lived TCP, HTTPS with a 29 KB"
echo "   certificate, between pods on different nodes"
$ns lab probe start --name demo
sleep 3
echo
echo "== live MTU change: kubectl patch clusternetwork cluster --type merge -p '{\"spec\":{\"mtu\":1350}}'"
$kubectl patch clusternetwork cluster --type merge -p '{"spec":{"mtu":1350}}'
for _ in $(seq 1 100); do
  $ns --kubeconfig "$kubeconfig" status | sed -n '1,2p;/NODE/,/^$/p' | head -8
  phase=$($kubectl get clusternetwork cluster -o jsonpath='{.status.change.phase}')
  [[ "$phase" == Succeeded || "$phase" == Failed ]] && break
  sleep 0.5
done
echo
$ns --kubeconfig "$kubeconfig" status
echo
echo "== pod eth0 MTUs now:"
for p in pod-1-1 pod-2-1 pod-3-1; do printf '  %s: ' "$p"; $ns lab exec --name demo "$p" -- cat /sys/class/net/eth0/mtu; done
sleep 3
echo
echo "== netshift lab probe stop: what the change did to live traffic"
$ns lab probe stop --name demo
if [[ -n "$keep" ]]; then
  echo
  echo "The lab is still up: export KUBECONFIG=\$($ns lab kubeconfig --name demo); $ns lab down --name demo removes it."
fi
