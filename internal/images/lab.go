package images

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"netshift.io/netshift/internal/ovs/ovsdist"
)

// The lab's image references. Nodes never pull them (imagePullPolicy Never or
// IfNotPresent): the lab imports the archives into every node's containerd.
const (
	NetshiftRef = "netshift.io/netshift:lab"
	PauseRef    = "netshift.io/pause:lab"
	WorkloadRef = "netshift.io/workload:lab"
)

// Binaries are the programs the lab's images are made of, built beforehand
// (hack/build.sh builds them into bin/): Netshift is a lab build.
type Binaries struct {
	Netshift, CNI, Pause string
	// Busybox is a static busybox (Debian's busybox-static: /bin/busybox).
	Busybox string
}

// ovsTools go into the lab's image with the shared libraries they load:
// netshift runs ovs-ofctl (a VM's RARP); the others are there to look at a
// node's switch and the zones' databases from inside a pod.
var ovsTools = []string{"ovs-vsctl", "ovs-ofctl", "ovn-nbctl", "ovn-sbctl"}

// busyboxApplets are the commands the workload image offers.
var busyboxApplets = []string{"sh", "sleep", "cat", "echo", "ls", "ip", "ping", "nc", "wget", "hostname", "true", "false", "ps", "kill", "env"}

// Lab describes the lab's three images from the built binaries.
func Lab(b Binaries) ([]Image, error) {
	var out []Image
	var errs []string
	for _, build := range []func() (Image, error){
		func() (Image, error) { return NetshiftImage(b.Netshift, b.CNI) },
		func() (Image, error) { return PauseImage(b.Pause) },
		func() (Image, error) { return WorkloadImage(b.Busybox) },
	} {
		img, err := build()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, img)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("lab images: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

func binaryFile(src, dst string) (File, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return File{}, fmt.Errorf("image file %s: %w", dst, err)
	}
	return File{Path: dst, Mode: 0o755, Data: data}, nil
}

// NetshiftImage is the product's image: the operator, the agent and the CLI
// (one binary), the CNI plugin the agent's DaemonSet installs on each node,
// the OVS and OVN clients netshift still runs, with their libraries, and a
// static busybox for the shell and nsenter the node-restore command runs
// with.
func NetshiftImage(netshift, cni string) (Image, error) {
	return netshiftImage(netshift, cni, "/bin/busybox")
}

func netshiftImage(netshift, cni, busybox string) (Image, error) {
	img := Image{Ref: NetshiftRef, Entrypoint: []string{"/usr/local/bin/netshift"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	for src, dst := range map[string]string{netshift: "/usr/local/bin/netshift", cni: "/usr/local/bin/netshift-cni"} {
		f, err := binaryFile(src, dst)
		if err != nil {
			return img, err
		}
		img.Files = append(img.Files, f)
	}
	tools, err := OVSPrograms("/usr/bin", ovsTools...)
	if err != nil {
		return img, err
	}
	img.Files = append(img.Files, tools...)
	bb, err := binaryFile(busybox, "/bin/busybox")
	if err != nil {
		return img, err
	}
	img.Files = append(img.Files, bb)
	for _, a := range []string{"sh", "nsenter", "sleep", "cat"} {
		img.Files = append(img.Files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return img, nil
}

// PauseImage holds pod sandboxes: the static program of ./pause.
func PauseImage(pause string) (Image, error) {
	f, err := binaryFile(pause, "/pause")
	return Image{Ref: PauseRef, Entrypoint: []string{"/pause"}, Files: []File{f}}, err
}

// WorkloadImage is the lab's workload: a static busybox and its commands.
func WorkloadImage(busybox string) (Image, error) {
	f, err := binaryFile(busybox, "/bin/busybox")
	img := Image{Ref: WorkloadRef, Entrypoint: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}, Files: []File{f}}
	for _, a := range busyboxApplets {
		img.Files = append(img.Files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return img, err
}

var lddLine = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

// WithLibraries returns the programs with every shared library they load
// and the loader they name, each at the path the program's own loader finds
// it (programs unpacked with a loader of their own, as the lab's Open vSwitch,
// bring theirs).
func WithLibraries(programs ...string) ([]File, error) {
	paths := map[string]bool{}
	for _, p := range programs {
		paths[p] = true
		libs, err := libraries(p)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			paths[l] = true
		}
	}
	var files []File
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("image file %s: %w", p, err)
		}
		f, err := HostFile(real, 0o755)
		if err != nil {
			return nil, err
		}
		f.Path = p // the loader finds a library by the name it printed
		files = append(files, f)
	}
	return files, nil
}

// OVSPrograms are programs of the lab's Open vSwitch and OVN (ovsdist), with
// the loader and libraries they were unpacked with, each linked from dir
// (on the image's PATH).
func OVSPrograms(dir string, names ...string) ([]File, error) {
	d, err := ovsdist.Find()
	if err != nil {
		return nil, err
	}
	programs := make([]string, len(names))
	for i, n := range names {
		if programs[i], err = filepath.EvalSymlinks(d.Program(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Root, err)
		}
	}
	files, err := WithLibraries(programs...)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		files = append(files, File{Path: filepath.Join(dir, n), Link: programs[i]})
	}
	return files, nil
}

// libraries lists what the program's loader loads for it, the loader
// included: a static program has none.
func libraries(program string) ([]string, error) {
	f, err := elf.Open(program)
	if err != nil {
		return nil, fmt.Errorf("image file %s: %w", program, err)
	}
	defer f.Close()
	var interp string
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			data, err := io.ReadAll(prog.Open())
			if err != nil {
				return nil, fmt.Errorf("image file %s: its loader: %w", program, err)
			}
			interp = strings.TrimRight(string(data), "\x00")
		}
	}
	if interp == "" {
		return nil, nil
	}
	out, err := exec.Command(interp, "--list", program).Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list %s: %w", interp, program, err)
	}
	var libs []string
	for _, line := range bytes.Split(out, []byte("\n")) {
		if m := lddLine.FindSubmatch(line); m != nil {
			libs = append(libs, string(m[1]))
		}
	}
	return libs, nil
}
