// Package ovsdist finds the lab's Open vSwitch and OVN: Debian 13's
// packages (Open vSwitch 3.5, OVN 25.03), which hack/setup.sh unpacks into a
// directory of their own and points at their own C library, leaving the
// machine's packages as they are. Every lab mode, the integration tests and
// the lab's images run these, never a switch the machine may have installed.
package ovsdist

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// DefaultRoot is where hack/setup.sh unpacks them; NETSHIFT_OVS_ROOT names
// another directory. The programs there are patched to load their libraries
// from it, so it cannot move once unpacked.
const DefaultRoot = "/var/cache/netshift/openvswitch"

// Dist is one unpacked Open vSwitch and OVN.
type Dist struct {
	// Root is the directory the packages are unpacked in.
	Root string
	// OVS and OVN are the packages' versions, as Debian gives them.
	OVS, OVN string
}

// Root is the directory the lab's Open vSwitch and OVN are looked for in.
func Root() string {
	if r := os.Getenv("NETSHIFT_OVS_ROOT"); r != "" {
		return r
	}
	return DefaultRoot
}

// Find reads the unpacked packages' versions from Root.
func Find() (Dist, error) {
	d := Dist{Root: Root()}
	f, err := os.Open(filepath.Join(d.Root, "VERSION"))
	if err != nil {
		return d, fmt.Errorf("the lab's Open vSwitch 3.5 and OVN 25.03 are not unpacked in %s (NETSHIFT_OVS_ROOT): run hack/setup.sh as root: %w", d.Root, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, version, _ := strings.Cut(sc.Text(), " ")
		switch name {
		case "openvswitch-switch":
			d.OVS = version
		case "ovn-host":
			d.OVN = version
		}
	}
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if d.OVS == "" || d.OVN == "" {
		return d, fmt.Errorf("%s names no openvswitch-switch or ovn-host version: run hack/setup.sh as root to unpack them again", f.Name())
	}
	return d, nil
}

// Bin is the directory of its programs, to put first on PATH.
func (d Dist) Bin() string { return filepath.Join(d.Root, "bin") }

// Program is the path of one of its programs (ovs-vsctl, ovn-northd...).
func (d Dist) Program(name string) string { return filepath.Join(d.Bin(), name) }

// Schema is the path of a database schema: "vswitch" (Open vSwitch's),
// "ovn-nb", "ovn-sb", "ovn-ic-nb" or "ovn-ic-sb".
func (d Dist) Schema(name string) string {
	if strings.HasPrefix(name, "ovn-") {
		return filepath.Join(d.Root, "usr/share/ovn", name+".ovsschema")
	}
	return filepath.Join(d.Root, "usr/share/openvswitch", name+".ovsschema")
}

// Env is what a process needs to run these programs by name and find their
// data: PATH with Bin first, and Open vSwitch's and OVN's data directories.
func (d Dist) Env(path string) []string {
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	return []string{
		"PATH=" + d.Bin() + ":" + strings.TrimPrefix(path, d.Bin()+":"),
		"OVS_PKGDATADIR=" + filepath.Join(d.Root, "usr/share/openvswitch"),
		"OVN_PKGDATADIR=" + filepath.Join(d.Root, "usr/share/ovn"),
	}
}

var use struct {
	once sync.Once
	d    Dist
	err  error
}

// Use finds the packages and sets this process's environment to run them
// (and so every program it starts): see Env. Later calls return the first's answer.
func Use() (Dist, error) {
	use.once.Do(func() {
		use.d, use.err = Find()
		if use.err != nil {
			return
		}
		for _, kv := range use.d.Env(os.Getenv("PATH")) {
			k, v, _ := strings.Cut(kv, "=")
			if use.err = os.Setenv(k, v); use.err != nil {
				return
			}
		}
	})
	return use.d, use.err
}

// Schema is the path of a schema of the packages Use found, or of Root's when
// Use has not found them (the caller's own start then fails naming the file).
func Schema(name string) string {
	d, err := Use()
	if err != nil {
		d = Dist{Root: Root()}
	}
	return d.Schema(name)
}
