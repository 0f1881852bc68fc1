package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func untar(t *testing.T, data []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func readEntry(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the archive: %v", name, err)
		}
		if h.Name == name {
			b, _ := io.ReadAll(tr)
			return b
		}
	}
}

func TestArchiveIsADockerArchiveOfOneLayer(t *testing.T) {
	img := Image{Ref: "netshift.io/pause:lab", Entrypoint: []string{"/pause"}, Env: []string{"A=b"},
		Files: []File{{Path: "/usr/local/bin/tool", Mode: 0o755, Data: []byte("#!tool")}, {Path: "/pause", Mode: 0o755, Data: []byte("ELF")},
			{Path: "/bin/sh", Link: "busybox"}}}
	var a, b bytes.Buffer
	id, err := img.WriteArchive(&a)
	if err != nil {
		t.Fatal(err)
	}
	id2, _ := img.WriteArchive(&b)
	if id != id2 || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two archives of the same image differ")
	}
	var manifest []manifestEntry
	if err := json.Unmarshal(readEntry(t, a.Bytes(), "manifest.json"), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || manifest[0].RepoTags[0] != "netshift.io/pause:lab" || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest %+v", manifest)
	}
	if "sha256:"+strings.TrimSuffix(manifest[0].Config, ".json") != id {
		t.Fatalf("image ID %s is not the configuration's name %s", id, manifest[0].Config)
	}
	cfgData := readEntry(t, a.Bytes(), manifest[0].Config)
	if "sha256:"+digest(cfgData) != id {
		t.Fatal("the image ID is not the digest of the configuration")
	}
	var cfg imageConfig
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		t.Fatal(err)
	}
	layer := readEntry(t, a.Bytes(), manifest[0].Layers[0])
	if cfg.RootFS.DiffIDs[0] != "sha256:"+digest(layer) || cfg.Config.Entrypoint[0] != "/pause" || cfg.OS != "linux" {
		t.Fatalf("configuration %+v does not describe the layer", cfg)
	}
	entries := untar(t, layer)
	for name, want := range map[string]byte{"usr/": tar.TypeDir, "usr/local/": tar.TypeDir, "usr/local/bin/": tar.TypeDir,
		"usr/local/bin/tool": tar.TypeReg, "pause": tar.TypeReg, "bin/sh": tar.TypeSymlink} {
		if h := entries[name]; h == nil || h.Typeflag != want {
			t.Errorf("layer entry %s: %+v", name, h)
		}
	}
	if entries["bin/sh"].Linkname != "busybox" || entries["pause"].Mode != 0o755 {
		t.Errorf("symlink or mode lost: %+v %+v", entries["bin/sh"], entries["pause"])
	}
	if string(readEntry(t, layer, "pause")) != "ELF" {
		t.Error("file content lost")
	}
}

func TestInvalidImagesAreRefused(t *testing.T) {
	for _, c := range []struct {
		img  Image
		want string
	}{
		{Image{Ref: "notag"}, `image ref "notag": want a reference with a tag`},
		{Image{Ref: "a:b", Files: []File{{Path: "rel/x"}}}, `file path "rel/x": want a clean absolute path`},
		{Image{Ref: "a:b", Files: []File{{Path: "/a/../b"}}}, `file path "/a/../b"`},
		{Image{Ref: "a:b", Files: []File{{Path: "/x"}, {Path: "/x"}}}, `file path "/x" given twice`},
	} {
		var buf bytes.Buffer
		if _, err := c.img.WriteArchive(&buf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.img, err, c.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%+v: wrote %d bytes of a refused image", c.img, buf.Len())
		}
	}
}

func TestWithLibrariesBringsTheLoader(t *testing.T) {
	files, err := WithLibraries("/bin/ls")
	if err != nil {
		t.Skipf("no ldd or /bin/ls here: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	all := strings.Join(names, " ")
	if !strings.Contains(all, "/bin/ls") || !strings.Contains(all, "libc.so") || !strings.Contains(all, "ld-linux") {
		t.Fatalf("files %v: want the program, libc and the loader", names)
	}
}
