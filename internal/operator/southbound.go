package operator

import (
	"context"
	"sort"

	"netshift.io/netshift/internal/ovs"
)

// encapsToFix are the records whose port is not the wanted one, in UUID order.
func encapsToFix(records []ovs.Encap, port int) []string {
	var fix []string
	for _, r := range records {
		have := r.DstPort
		if have == 0 {
			have = ovs.DefaultGenevePort
		}
		if have != port {
			fix = append(fix, r.UUID)
		}
	}
	sort.Strings(fix)
	return fix
}

// keepEncapPort sets the applied port on the Geneve Encap records that lack
// it, and returns how many it fixed: a chassis that registers again (a new
// node, ovn-controller recreating its Chassis row) comes without it.
func keepEncapPort(ctx context.Context, sb *ovs.Southbound, port int32) (int, error) {
	records, err := sb.GeneveEncaps(ctx)
	if err != nil {
		return 0, err
	}
	fix := encapsToFix(records, int(port))
	if len(fix) == 0 {
		return 0, nil
	}
	return sb.SetEncapPort(ctx, int(port), fix)
}
