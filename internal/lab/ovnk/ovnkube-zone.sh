# Sourced by the lab's OVN-Kubernetes containers: the node's zone, read from
# its label k8s.ovn.org/zone-name when the container starts, as ovnkube.sh
# reads it, and what that zone means for this node's processes.
#   ZONE        the zone ("global" when the node has no label)
#   ZONE_LOCAL  yes when the zone is the node's own (its databases run here)
#   ZONE_FLAGS  ovnkube's interconnect flags ("" without interconnect)
#   NB, SB      the zone's databases
sa=/var/run/secrets/kubernetes.io/serviceaccount
until ZONE=$(kubectl --server="$K8S_APISERVER" --token="$(cat $sa/token)" --certificate-authority=$sa/ca.crt \
	get node "$K8S_NODE" -o 'jsonpath={.metadata.labels.k8s\.ovn\.org/zone-name}'); do
	sleep 2
done
ZONE=${ZONE:-global}
ZONE_LOCAL=no
NB="tcp:$OVN_CENTRAL:6641" SB="tcp:$OVN_CENTRAL:6642"
if [ "$ZONE" = "$K8S_NODE" ]; then
	ZONE_LOCAL=yes NB=unix:/var/run/ovn/ovnnb_db.sock SB=unix:/var/run/ovn/ovnsb_db.sock
fi
ZONE_FLAGS=
if [ "$OVN_ENABLE_INTERCONNECT" = true ]; then
	ZONE_FLAGS="--enable-interconnect --zone $ZONE"
elif [ "$ZONE" != global ]; then
	echo "node $K8S_NODE: zone $ZONE needs interconnect, and OVN_ENABLE_INTERCONNECT is not true" >&2
	exit 1
fi
echo "node $K8S_NODE: zone $ZONE (own databases: $ZONE_LOCAL; $ZONE_FLAGS)"
