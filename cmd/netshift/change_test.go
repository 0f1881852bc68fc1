package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestChangeRefusesBadInput: `netshift change` and `netshift uninstall` (and
// the lab's new flags) name the argument or flag and the allowed range, with
// exit code 2, before they talk to any cluster.
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
		{[]string{"uninstall", "--timeout", "0s"}, "--timeout 0s: want more than 0"},
		{[]string{"uninstall", "extra"}, `unknown command "extra"`},
		{[]string{"lab", "up", "--node-layout", "bogus"}, `--node-layout: "bogus" is not containerd, crio or k3s`},
		{[]string{"lab", "up", "--without-netshift", "--ovn"}, "--without-netshift: a lab without netshift is plain VXLAN or Geneve"},
	} {
		runner := runBin
		if c.args[0] == "lab" {
			runner = runLab
		}
		out, err := runner(t, c.args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, c.want) {
			t.Errorf("netshift %s: err %v, output %q; want exit 2 and an error saying %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}
