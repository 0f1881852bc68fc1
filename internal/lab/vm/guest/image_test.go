package guest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeSources lays out an unpacked kernel package and two executables as the
// real ones are laid out, with made-up contents.
func fakeSources(t *testing.T, skip ...string) Sources {
	t.Helper()
	dir := t.TempDir()
	write := func(path string, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := filepath.Join(dir, "kernel")
	write(filepath.Join(k, "boot", "vmlinuz-6.1.0-9-amd64"), "kernel")
	for i, m := range Modules {
		if !slices.Contains(skip, m) {
			write(filepath.Join(k, "lib/modules/6.1.0-9-amd64/kernel/drivers", strconv.Itoa(i), m+".ko"), "module "+m)
		}
	}
	write(filepath.Join(dir, "busybox"), "\x7fELF busybox")
	write(filepath.Join(dir, "echo"), "\x7fELF echo")
	return Sources{KernelDir: k, Busybox: filepath.Join(dir, "busybox"), Echo: filepath.Join(dir, "echo")}
}

type entry struct {
	mode fs.FileMode
	data string
}

// readNewc reads a newc archive back, as the kernel does.
func readNewc(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if !bytes.HasPrefix(b[off:], []byte(newcMagic)) {
			t.Fatalf("offset %d: no newc magic", off)
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, namesize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+namesize-1])
		data := off + align(110+namesize)
		if name == "TRAILER!!!" {
			if end := align(data + size); end != len(b) {
				t.Errorf("trailer ends at %d, archive at %d", end, len(b))
			}
			return out
		}
		m := fs.FileMode(mode & 0o777)
		switch mode &^ 0o777 {
		case 0o040000:
			m |= fs.ModeDir
		case 0o120000:
			m |= fs.ModeSymlink
		}
		out[name] = entry{mode: m, data: string(b[data : data+size])}
		off = align(data + size)
	}
}

func TestAGuestImageHoldsWhatItsInitNeeds(t *testing.T) {
	src := fakeSources(t)
	img, err := Build(src, filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	if img.Version != "6.1.0-9-amd64" || filepath.Base(img.Kernel) != "vmlinuz-6.1.0-9-amd64" {
		t.Errorf("kernel %s version %s", img.Kernel, img.Version)
	}
	b, err := os.ReadFile(img.Initrd)
	if err != nil {
		t.Fatal(err)
	}
	files := readNewc(t, b)
	for name, want := range map[string]entry{
		"init":                    {mode: 0o755},
		"bin/busybox":             {mode: 0o755, data: "\x7fELF busybox"},
		"bin/netshift-guest-echo": {mode: 0o755, data: "\x7fELF echo"},
		"bin/sh":                  {mode: fs.ModeSymlink | 0o777, data: "busybox"},
		"proc":                    {mode: fs.ModeDir | 0o755},
		"dev":                     {mode: fs.ModeDir | 0o755},
	} {
		got, ok := files[name]
		switch {
		case !ok:
			t.Errorf("%s missing", name)
		case got.mode != want.mode:
			t.Errorf("%s: mode %v, want %v", name, got.mode, want.mode)
		case want.data != "" && got.data != want.data:
			t.Errorf("%s: %q, want %q", name, got.data, want.data)
		}
	}
	for _, m := range Modules {
		if files["lib/modules/"+m+".ko"].data != "module "+m {
			t.Errorf("module %s not in the image", m)
		}
	}
	// The modules load in dependency order: virtio_net last, after virtio and failover.
	init := files["init"].data
	if !strings.Contains(init, "for m in "+strings.Join(Modules, " ")+"; do") {
		t.Errorf("init does not load the modules in order:\n%s", init)
	}
	for _, want := range []string{"netshift.ip=", "ip link set eth0 up", "exec /bin/netshift-guest-echo"} {
		if !strings.Contains(init, want) {
			t.Errorf("init lacks %q", want)
		}
	}
}

func TestTheSameSourcesMakeTheSameImage(t *testing.T) {
	src := fakeSources(t)
	out := filepath.Join(t.TempDir(), "out")
	a, err := Build(src, out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(src, out)
	if err != nil {
		t.Fatal(err)
	}
	if a.Initrd != b.Initrd {
		t.Errorf("rebuilt as %s, first %s", b.Initrd, a.Initrd)
	}
	if err := os.WriteFile(src.Echo, []byte("\x7fELF echo v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Build(src, out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Initrd == a.Initrd {
		t.Error("a changed echo program kept the old image's name")
	}
}

func TestABadSourceIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Sources)
		skip  []string
		error string
	}{
		{"a module missing", nil, []string{"net_failover"}, "missing net_failover.ko"},
		{"no kernel", func(s *Sources) { s.KernelDir = t.TempDir() }, nil, "no boot/vmlinuz-*"},
		{"busybox not a program", func(s *Sources) { _ = os.WriteFile(s.Busybox, []byte("#!/bin/sh"), 0o755) }, nil, "busybox"},
		{"no echo program", func(s *Sources) { s.Echo = "" }, nil, "the guest's echo program"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fakeSources(t, tc.skip...)
			if tc.edit != nil {
				tc.edit(&src)
			}
			out := filepath.Join(t.TempDir(), "out")
			_, err := Build(src, out)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("error %v, want one naming %q", err, tc.error)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a failed build left %d files", len(entries))
			}
		})
	}
}
