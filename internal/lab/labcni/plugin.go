// Package labcni is the lab's main CNI plugin, its stand-in for a cluster's
// network plugin (the part of ovn-kubernetes or of an OVS CNI that wires a pod):
// a veth whose pod end is the pod's eth0, with an address from host-local, and
// whose node end joins the node's integration bridge. In OVN mode it also
// creates the pod's logical switch port on the node's switch (what
// ovn-kubernetes' controller does) and binds it by iface-id. netshift's own
// plugin, netshift-cni, is chained after it.
package labcni

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"netshift.io/netshift/internal/netdev"
)

// Name is the plugin's type in a CNI configuration (and its binary's name).
const Name = "netshift-lab-cni"

// Config is the plugin's configuration.
type Config struct {
	types.NetConf
	// Bridge is the integration bridge; OVSDB the node's OVS socket.
	Bridge string `json:"bridge"`
	OVSDB  string `json:"ovsdb"`
	// MTU is the MTU a new pod's link is made with (netshift-cni, chained after, sets the
	// node's applied one).
	MTU int `json:"mtu"`
	// OVN, when set, makes the pod's logical switch port.
	OVN *struct {
		// NBFile holds the address of the northbound database the node's switch is in now
		// (the node's zone's: a zone move rewrites it).
		NBFile  string `json:"nbFile"`
		Switch  string `json:"switch"`  // the node's logical switch
		Gateway string `json:"gateway"` // the switch's router port address: the pod's default route
	} `json:"ovn,omitempty"`
	// ChecksumOffloadOff makes the plugin a chained one that only turns the pod
	// interface's TX checksum offload off and passes the previous result on:
	// behind the real OVN-Kubernetes, whose pods' segments the nodes' userspace
	// datapath would otherwise drop as invalid.
	ChecksumOffloadOff bool `json:"checksumOffloadOff,omitempty"`
}

func parse(stdin []byte) (*Config, error) {
	c := &Config{}
	if err := json.Unmarshal(stdin, c); err != nil {
		return nil, fmt.Errorf("%s: parse configuration: %w", Name, err)
	}
	if c.ChecksumOffloadOff {
		return c, nil
	}
	if c.Bridge == "" || c.OVSDB == "" || c.MTU < 576 || c.IPAM.Type == "" {
		return nil, fmt.Errorf("%s: bridge, ovsdb, mtu (576 or more) and ipam are required", Name)
	}
	return c, nil
}

// Main runs the plugin (a lab build's netshift, called as netshift-lab-cni).
func Main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: del, Check: func(*skel.CmdArgs) error { return nil }},
		version.All, "netshift-lab-cni: the lab's stand-in network plugin (veth into br-int, OVN logical port)")
}

// names are a sandbox's deterministic link names and logical port.
func names(args *skel.CmdArgs) (host, port string) {
	sum := sha256.Sum256([]byte(args.ContainerID))
	host = fmt.Sprintf("vp%x", sum[:6]) // 14 bytes, within IFNAMSIZ
	ns, pod := cniArg(args.Args, "K8S_POD_NAMESPACE"), cniArg(args.Args, "K8S_POD_NAME")
	port = ns + "_" + pod
	if ns == "" || pod == "" {
		port = "sandbox_" + args.ContainerID
	}
	return host, port
}

func cniArg(all, key string) string {
	for _, kv := range strings.Split(all, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// macFor derives the pod's MAC from its address, as ovn-kubernetes does.
func macFor(ip net.IP) net.HardwareAddr {
	v4 := ip.To4()
	return net.HardwareAddr{0x0a, 0x58, v4[0], v4[1], v4[2], v4[3]}
}

func add(args *skel.CmdArgs) (err error) {
	c, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	if c.ChecksumOffloadOff {
		return offloadOff(args, c)
	}
	ctx := context.Background()
	r, err := invoke.DelegateAdd(ctx, c.IPAM.Type, args.StdinData, nil)
	if err != nil {
		return fmt.Errorf("%s: address from %s: %w", Name, c.IPAM.Type, err)
	}
	defer func() {
		if err != nil {
			_ = invoke.DelegateDel(ctx, c.IPAM.Type, args.StdinData, nil)
		}
	}()
	res, err := current.NewResultFromResult(r)
	if err != nil || len(res.IPs) == 0 {
		return fmt.Errorf("%s: %s gave no address: %v", Name, c.IPAM.Type, err)
	}
	addr := res.IPs[0].Address
	mac := macFor(addr.IP)
	host, port := names(args)
	podNS, err := netns.GetFromPath(args.Netns)
	if err != nil {
		return fmt.Errorf("%s: pod namespace %s: %w", Name, args.Netns, err)
	}
	defer podNS.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: host, MTU: c.MTU}, PeerName: args.IfName, PeerNamespace: netlink.NsFd(int(podNS)), PeerHardwareAddr: mac}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("%s: veth %s: %w", Name, host, err)
	}
	defer func() {
		if err != nil {
			_ = netlink.LinkDel(veth)
		}
	}()
	hostLink, err := netlink.LinkByName(host)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetARPOff(hostLink); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(hostLink); err != nil {
		return err
	}
	if err := netdev.InNetns(args.Netns, func() error {
		l, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMTU(l, c.MTU); err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &addr}); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		if c.OVN != nil {
			gw := net.ParseIP(c.OVN.Gateway)
			if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw}); err != nil {
				return fmt.Errorf("default route via %s: %w", gw, err)
			}
			res.IPs[0].Gateway = gw
		}
		// TCP through OVS's userspace datapath needs the checksums done in software.
		if out, err := exec.Command("ethtool", "-K", args.IfName, "tx", "off").CombinedOutput(); err != nil {
			return fmt.Errorf("ethtool -K %s tx off: %w: %s", args.IfName, err, out)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("%s: pod end in %s: %w", Name, args.Netns, err)
	}
	vsctl := []string{"--db=" + c.OVSDB, "--timeout=20", "--may-exist", "add-port", c.Bridge, host, "--", "set", "interface", host,
		"external_ids:iface-id=" + port, "external_ids:attached-mac=" + mac.String(), "external_ids:sandbox=" + args.ContainerID}
	if out, err := exec.Command("ovs-vsctl", vsctl...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: add %s to %s: %w: %s", Name, host, c.Bridge, err, out)
	}
	if c.OVN != nil {
		nb, err := northbound(c.OVN.NBFile)
		if err != nil {
			return err
		}
		a := mac.String() + " " + addr.IP.String()
		// The port records the sandbox it is for: a pod's port outlives none of its sandboxes, and
		// the DEL of an older sandbox of the pod must leave the newer one's port alone.
		if out, err := exec.Command("ovn-nbctl", "--db="+nb, "--timeout=20", "--may-exist", "lsp-add", c.OVN.Switch, port,
			"--", "lsp-set-addresses", port, a, "--", "lsp-set-port-security", port, a,
			"--", "set", "logical_switch_port", port, "external_ids:"+SandboxKey+"="+args.ContainerID).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: logical port %s: %w: %s", Name, port, err, out)
		}
	}
	res.Interfaces = []*current.Interface{{Name: host, Mac: mac.String()}, {Name: args.IfName, Mac: mac.String(), Sandbox: args.Netns, Mtu: c.MTU}}
	idx := 1
	res.IPs[0].Interface = &idx
	return types.PrintResult(res, c.CNIVersion)
}

// northbound reads the address of the northbound database the node's switch
// is in now.
func northbound(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil || strings.TrimSpace(string(data)) == "" {
		return "", fmt.Errorf("%s: the node's northbound database (from %s): %v", Name, file, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// SandboxKey is the logical port's external ID naming the sandbox it is for.
const SandboxKey = "netshift-lab-sandbox"

// delPort deletes the pod's logical port if it is this sandbox's.
func delPort(nb, port, sandbox string) error {
	out, err := exec.Command("ovn-nbctl", "--db="+nb, "--timeout=20", "--if-exists", "get", "logical_switch_port", port, "external_ids:"+SandboxKey).CombinedOutput()
	if err != nil { // --if-exists: a port or key that is not there is no error
		return fmt.Errorf("logical port %s: %w: %s", port, err, out)
	}
	if strings.Trim(strings.TrimSpace(string(out)), `"`) != sandbox {
		return nil // a newer sandbox's, or none of ours
	}
	if out, err := exec.Command("ovn-nbctl", "--db="+nb, "--timeout=20", "--if-exists", "lsp-del", port).CombinedOutput(); err != nil {
		return fmt.Errorf("lsp-del %s: %w: %s", port, err, out)
	}
	return nil
}

func del(args *skel.CmdArgs) error {
	c, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	if c.ChecksumOffloadOff {
		return nil // nothing of its own to take back
	}
	host, port := names(args)
	var errs []error
	if out, err := exec.Command("ovs-vsctl", "--db="+c.OVSDB, "--timeout=20", "--if-exists", "del-port", c.Bridge, host).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("del-port %s: %w: %s", host, err, out))
	}
	if l, err := netlink.LinkByName(host); err == nil {
		_ = netlink.LinkDel(l)
	}
	if c.OVN != nil {
		if nb, err := northbound(c.OVN.NBFile); err != nil {
			errs = append(errs, err)
		} else if err := delPort(nb, port, args.ContainerID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := invoke.DelegateDel(context.Background(), c.IPAM.Type, args.StdinData, nil); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", Name, errors.Join(errs...))
	}
	return nil
}

// offloadOff turns the pod interface's TX checksum offload off and prints the
// previous plugin's result as its own.
func offloadOff(args *skel.CmdArgs, c *Config) error {
	if c.RawPrevResult == nil {
		return fmt.Errorf("%s: checksumOffloadOff is a chained plugin's: no previous result", Name)
	}
	if err := version.ParsePrevResult(&c.NetConf); err != nil {
		return fmt.Errorf("%s: previous result: %w", Name, err)
	}
	err := netdev.InNetns(args.Netns, func() error {
		if out, err := exec.Command("ethtool", "-K", args.IfName, "tx", "off").CombinedOutput(); err != nil {
			return fmt.Errorf("ethtool -K %s tx off: %w: %s", args.IfName, err, out)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return types.PrintResult(c.PrevResult, c.CNIVersion)
}
