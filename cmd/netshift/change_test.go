package main

import (
	"strings"
	"testing"
)

// TestChangeRefusesBadInput: `netshift change` names the argument or flag
// and the allowed range, before it talks to any cluster.
func TestChangeRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"change", "mtu", "100"}, `mtu "100": want a number from 576 to 9158 (spec.mtu)`},
		{[]string{"change", "mtu", "1350x"}, `mtu "1350x": want a number from 576 to 9158`},
		{[]string{"change", "vxlan-port", "70000"}, `vxlan-port "70000": want a number from 1 to 65535 (spec.vxlanPort)`},
		{[]string{"change", "geneve-port", "0", "--dry-run"}, `geneve-port "0": want a number from 1 to 65535 (spec.genevePort)`},
		{[]string{"change", "colour", "5"}, `"colour": want mtu, vxlan-port or geneve-port`},
		{[]string{"change", "mtu"}, "accepts 2 arg(s), received 1"},
		{[]string{"change", "mtu", "1350", "--timeout", "0s"}, "--timeout 0s: want more than 0"},
	} {
		out, err := runBin(t, c.args...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("netshift %s: err %v, output %q; want an error saying %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}
