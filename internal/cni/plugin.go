package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/nodeconfig"
)

// Add gives the pod's interfaces, and the node ends of their veths, the MTU
// in force on the node, and passes the previous result on with the MTUs set.
// A node without a network configuration (netshift not set up there yet)
// leaves the pod as the main plugin made it.
func Add(args *skel.CmdArgs) error {
	c, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if c.Pool != nil {
		return poolAdd(args, c)
	}
	if c.prevResult == nil {
		return errors.New("netshift-cni is a chained plugin: it must come after the main plugin in the node's configuration list, whose result it needs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.lockTimeout)
	defer cancel()
	lock, err := nodeconfig.LockShared(ctx, c.NetworkConfig)
	if err != nil {
		return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
	}
	// Held until the result is printed: a live change's step waits for this ADD to end.
	defer lock.Unlock()
	f, err := nodeconfig.Read(c.NetworkConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return types.PrintResult(c.prevResult, c.CNIVersion)
	}
	if err != nil {
		return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
	}
	mtu := int(f.MTU)
	for _, i := range c.prevResult.Interfaces {
		switch i.Sandbox {
		case args.Netns:
			if err := setMTU(args.Netns, i.Name, mtu, ""); err != nil {
				return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
			}
			i.Mtu = mtu
		case "":
			// The node's end of the pod's link. Only a veth is the pod's own: a main plugin's
			// result may also name the bridge it attached the pod to, which is the node's.
			if err := setMTU("", i.Name, mtu, "veth"); err != nil {
				return fmt.Errorf("netshift-cni: pod sandbox %s: node end: %w", args.ContainerID, err)
			}
		}
	}
	return types.PrintResult(c.prevResult, c.CNIVersion)
}

// setMTU sets link's MTU in netns, when its kind is want ("" for any).
func setMTU(netns, link string, mtu int, want string) error {
	h, err := netdev.Open(netns)
	if err != nil {
		return err
	}
	defer h.Close()
	if want != "" {
		kind, err := h.Kind(link)
		if err != nil || kind != want {
			return err // a link of another kind is left alone
		}
	}
	return h.SetMTU(link, mtu)
}

// Check verifies that the pod's interfaces carry the node's MTU.
func Check(args *skel.CmdArgs) error {
	c, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if c.Pool != nil {
		return poolCheck(args, c)
	}
	if c.prevResult == nil {
		return errors.New("netshift-cni: CHECK needs the previous result")
	}
	f, err := nodeconfig.Read(c.NetworkConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
	}
	for _, i := range c.prevResult.Interfaces {
		if i.Sandbox != args.Netns {
			continue
		}
		h, err := netdev.Open(args.Netns)
		if err != nil {
			return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
		}
		got, err := h.MTU(i.Name)
		h.Close()
		if err != nil {
			return fmt.Errorf("netshift-cni: pod sandbox %s: %w", args.ContainerID, err)
		}
		if got != int(f.MTU) {
			return fmt.Errorf("netshift-cni: pod sandbox %s: %s has MTU %d, the node's configuration %s says %d",
				args.ContainerID, i.Name, got, c.NetworkConfig, f.MTU)
		}
	}
	return nil
}

// Del has nothing to undo as a chained plugin: the pod's interfaces go with
// its namespace. As the main plugin it undoes a pooled pod's wiring, or
// hands the DEL to the network plugin it wraps.
func Del(args *skel.CmdArgs) error {
	c, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if c.Pool != nil {
		return poolDel(args, c)
	}
	return nil
}
