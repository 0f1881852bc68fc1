#!/usr/bin/env bash
# The main job: sets everything up on a fresh machine (as root), builds a
# 3-node lab of real Kubernetes nodes (each a network namespace with its own
# Open vSwitch, containerd, kubelet and kube-proxy; VXLAN between them; the real
# control plane) with netshift installed from config/lab, starts the traffic
# probe between real pods, lowers the pod MTU by 100 live while traffic flows,
# prints netshift status as the change rolls, the pods' MTUs and the probe's
# report, then takes the lab down. `hack/demo.sh --keep` leaves it up.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=
[[ "${1:-}" == "--keep" ]] && keep=1
export PATH=/usr/local/go/bin:$PATH
# netshift status exits 3 when what it printed needs a person: the demo shows it and goes on.
status() { "$ns" --kubeconfig "$1" status || (($? == 3)); }
export KUBEBUILDER_ASSETS
KUBEBUILDER_ASSETS=$(hack/setup.sh)
hack/build.sh bin   # netshift, netshift-lab (its lab build), netshift-cni, the pause program
ns=bin/netshift     # the product: what a user runs against a cluster
lab=bin/netshift-lab
if [[ -z "$keep" ]]; then trap '$lab lab down --name demo >/dev/null 2>&1 || true' EXIT; fi

echo "== netshift-lab lab up --name demo"
$lab lab up --name demo
echo
echo "== netshift-lab lab status --name demo"
$lab lab status --name demo
echo
echo "== netshift status (the lab's API server, as the operator sees it)"
status "$($lab lab kubeconfig --name demo)"
echo
kubeconfig=$($lab lab kubeconfig --name demo)
kubectl="$KUBEBUILDER_ASSETS/kubectl --kubeconfig $kubeconfig"
echo "== kubectl get nodes -o wide; netshift as installed from config/lab"
$kubectl get nodes -o wide
$kubectl -n netshift-system get pods -o wide
echo
echo "== netshift-lab lab probe start: long-lived TCP every 5 ms, short-lived TCP, HTTPS with a 29 KB"
echo "   certificate, between pods on different nodes"
$lab lab probe start --name demo
sleep 3
echo
echo "== live MTU change: kubectl patch netshiftnetwork cluster --type merge -p '{\"spec\":{\"mtu\":1350}}'"
$kubectl patch netshiftnetwork cluster --type merge -p '{"spec":{"mtu":1350}}'
for _ in $(seq 1 100); do
  status "$kubeconfig" | sed -n '1,2p;/NODE/,/^$/p' | head -8
  phase=$($kubectl get netshiftnetwork cluster -o jsonpath='{.status.change.phase}')
  [[ "$phase" == Succeeded || "$phase" == Failed ]] && break
  sleep 0.5
done
echo
status "$kubeconfig"
echo
echo "== pod eth0 MTUs now (from inside each pod):"
$kubectl -n lab get pods -o wide
for p in $($kubectl -n lab get pods -o jsonpath='{.items[*].metadata.name}'); do
  printf '  %s: ' "$p"; $kubectl -n lab exec "$p" -- cat /sys/class/net/eth0/mtu
done
sleep 3
echo
echo "== netshift-lab lab probe stop: what the change did to live traffic"
$lab lab probe stop --name demo
if [[ -n "$keep" ]]; then
  echo
  echo "The lab is still up: export KUBECONFIG=\$($lab lab kubeconfig --name demo); $lab lab down --name demo removes it."
fi
