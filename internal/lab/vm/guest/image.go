package guest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"netshift.io/netshift/internal/atomicfile"
)

// Sources are what a guest image is made of: Debian's kernel package, unpacked
// (`apt-get download linux-image-…-amd64` and `dpkg -x`), Debian's static
// busybox, and the guest's own program.
type Sources struct {
	// KernelDir holds boot/vmlinuz-VERSION and lib/modules/VERSION/.
	KernelDir string
	// Busybox is a static busybox (Debian's busybox-static: /bin/busybox).
	Busybox string
	// Echo is the guest's answering program (bin/netshift-guest-echo), static.
	Echo string
}

// Image is a bootable guest: the kernel QEMU is given with -kernel, and the
// initramfs with -initrd.
type Image struct {
	Kernel  string `json:"kernel"`
	Initrd  string `json:"initrd"`
	Version string `json:"version"` // the kernel's
}

// Modules are the kernel modules the guest loads, in the order they depend on
// each other (the package ships no modules.dep): virtio over PCI, and
// virtio-net with the failover modules it needs.
var Modules = []string{"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net"}

// EchoPort is the UDP port the guest answers on.
const EchoPort = 7000

// Build makes the guest's initramfs in dir (named by what went into it, so
// that a rebuild with the same sources writes nothing) and returns the image.
func Build(src Sources, dir string) (Image, error) {
	kernel, version, err := findKernel(src.KernelDir)
	if err != nil {
		return Image{}, err
	}
	archive, err := initramfs(src, version)
	if err != nil {
		return Image{}, err
	}
	sum := sha256.Sum256(archive)
	initrd := filepath.Join(dir, "initrd-"+hex.EncodeToString(sum[:8])+".cpio")
	if _, err := os.Stat(initrd); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Image{}, fmt.Errorf("guest image: %w", err)
		}
		if err := atomicfile.Write(initrd, archive, 0o644); err != nil {
			return Image{}, fmt.Errorf("guest image: %w", err)
		}
	}
	return Image{Kernel: kernel, Initrd: initrd, Version: version}, nil
}

// findKernel finds the one kernel in an unpacked kernel package.
func findKernel(dir string) (path, version string, err error) {
	found, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("guest kernel: no boot/vmlinuz-* in %s (unpack Debian's linux-image package there: hack/setup.sh does)", dir)
	case 1:
	default:
		return "", "", fmt.Errorf("guest kernel: %d kernels in %s, want one: %s", len(found), dir, strings.Join(found, ", "))
	}
	version = strings.TrimPrefix(filepath.Base(found[0]), "vmlinuz-")
	if _, err := os.Stat(filepath.Join(dir, "lib", "modules", version)); err != nil {
		return "", "", fmt.Errorf("guest kernel %s: its modules: %w", version, err)
	}
	return found[0], version, nil
}

// initramfs is the guest's root file system as a newc archive.
func initramfs(src Sources, version string) ([]byte, error) {
	modules, err := findModules(filepath.Join(src.KernelDir, "lib", "modules", version))
	if err != nil {
		return nil, err
	}
	busybox, err := readExecutable(src.Busybox, "busybox")
	if err != nil {
		return nil, err
	}
	echo, err := readExecutable(src.Echo, "the guest's echo program")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := &newcWriter{w: &buf}
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules"} {
		w.dir(d)
	}
	w.file("bin/busybox", 0o755, busybox)
	w.symlink("bin/sh", "busybox")
	w.file("bin/netshift-guest-echo", 0o755, echo)
	for _, m := range Modules {
		data, err := os.ReadFile(modules[m])
		if err != nil {
			return nil, fmt.Errorf("guest kernel %s: module %s: %w", version, m, err)
		}
		w.file("lib/modules/"+m+".ko", 0o644, data)
	}
	w.file("init", 0o755, []byte(initScript()))
	if err := w.close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// findModules finds each of Modules in a kernel's module tree.
func findModules(tree string) (map[string]string, error) {
	want := map[string]bool{}
	for _, m := range Modules {
		want[m] = true
	}
	found := map[string]string{}
	err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name := strings.TrimSuffix(d.Name(), ".ko"); !d.IsDir() && want[name] && strings.HasSuffix(d.Name(), ".ko") {
			found[name] = path
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("guest kernel modules in %s: %w", tree, err)
	}
	var missing []string
	for _, m := range Modules {
		if found[m] == "" {
			missing = append(missing, m+".ko")
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("guest kernel modules in %s: missing %s (uncompressed .ko files are needed: busybox's insmod loads no .ko.xz)",
			tree, strings.Join(missing, ", "))
	}
	return found, nil
}

func readExecutable(path, what string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("guest image: no path given for " + what)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("guest image: %s: %w", what, err)
	}
	if !bytes.HasPrefix(data, []byte("\x7fELF")) {
		return nil, fmt.Errorf("guest image: %s %s is not an executable (no ELF header)", what, path)
	}
	return data, nil
}

// initScript is the guest's /init: the virtio modules, the address the
// kernel command line gives (netshift.ip=ADDRESS/LENGTH), and then the
// answering program for good (the guest's PID 1 never exits).
func initScript() string {
	return `#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in ` + strings.Join(Modules, " ") + `; do
	insmod /lib/modules/$m.ko || echo "netshift-guest: insmod $m failed"
done
ip=
for arg in $(cat /proc/cmdline); do
	case $arg in netshift.ip=*) ip=${arg#netshift.ip=} ;; esac
done
ip link set lo up
ip link set eth0 up
[ -n "$ip" ] && ip addr add "$ip" dev eth0
echo "netshift-guest: eth0 $ip up"
exec /bin/netshift-guest-echo
`
}

// KernelDir is where hack/setup.sh unpacks Debian's kernel package for the
// guest (NETSHIFT_GUEST_KERNEL overrides it).
func KernelDir() string {
	if d := os.Getenv("NETSHIFT_GUEST_KERNEL"); d != "" {
		return d
	}
	return "/var/cache/netshift/guest-kernel"
}
