// Package images writes container images as docker-archive tarballs (the
// format `docker save` writes and `ctr images import` reads), so that the lab
// can run netshift, its workload and the pause container on nodes that reach
// no registry. The archives are reproducible: the same files make the same
// image ID.
package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// File is one file of an image's single layer.
type File struct {
	Path string // absolute path inside the image
	Mode int64  // permission bits
	Data []byte
	// Link, when set, makes the entry a symlink to Link (Data is ignored).
	Link string
}

// Image is what an archive holds: one layer, a reference and the command.
type Image struct {
	Ref        string // e.g. "netshift.io/pause:lab"
	Entrypoint []string
	Cmd        []string
	Env        []string
	Files      []File
}

// Validate says what is wrong with the image's description, naming the field.
func (img Image) Validate() error {
	if img.Ref == "" || !strings.Contains(img.Ref, ":") || strings.ContainsAny(img.Ref, " \t") {
		return fmt.Errorf("image ref %q: want a reference with a tag, like netshift.io/pause:lab", img.Ref)
	}
	seen := map[string]bool{}
	for _, f := range img.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return fmt.Errorf("image %s: file path %q: want a clean absolute path below /", img.Ref, f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("image %s: file path %q given twice", img.Ref, f.Path)
		}
		seen[f.Path] = true
	}
	return nil
}

// epoch is every entry's time: archives of the same files are byte-identical.
var epoch = time.Unix(0, 0).UTC()

// layer writes the image's files as a tar, with their parent directories first.
func (img Image) layer() ([]byte, error) {
	files := append([]File(nil), img.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	dirs := map[string]bool{}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var addDir func(string) error
	addDir = func(d string) error {
		if d == "/" || dirs[d] {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
	}
	for _, f := range files {
		if err := addDir(path.Dir(f.Path)); err != nil {
			return nil, err
		}
		h := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		if f.Link != "" {
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if f.Link == "" {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// imageConfig is the part of the OCI/Docker image configuration netshift sets.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Created      string `json:"created"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint,omitempty"`
		Cmd        []string `json:"Cmd,omitempty"`
		Env        []string `json:"Env,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// WriteArchive writes the image as a docker-archive tarball and returns its
// image ID (the digest of its configuration).
func (img Image) WriteArchive(w io.Writer) (string, error) {
	if err := img.Validate(); err != nil {
		return "", err
	}
	layer, err := img.layer()
	if err != nil {
		return "", fmt.Errorf("image %s: layer: %w", img.Ref, err)
	}
	layerID := digest(layer)
	var cfg imageConfig
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", epoch.Format(time.RFC3339)
	cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.Env = img.Entrypoint, img.Cmd, img.Env
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{"sha256:" + layerID}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	id := digest(cfgJSON)
	manifest, err := json.Marshal([]manifestEntry{{Config: id + ".json", RepoTags: []string{img.Ref}, Layers: []string{layerID + "/layer.tar"}}})
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{{layerID + "/layer.tar", layer}, {id + ".json", cfgJSON}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return "", fmt.Errorf("image %s: %w", img.Ref, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return "", fmt.Errorf("image %s: %w", img.Ref, err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("image %s: %w", img.Ref, err)
	}
	return "sha256:" + id, nil
}

// WriteArchiveFile writes the archive to a file, whole or not at all.
func (img Image) WriteArchiveFile(file string) (string, error) {
	tmp, err := os.CreateTemp(path.Dir(file), ".image-*")
	if err != nil {
		return "", fmt.Errorf("image %s: %w", img.Ref, err)
	}
	defer os.Remove(tmp.Name())
	id, err := img.WriteArchive(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return "", fmt.Errorf("image %s: write %s: %w", img.Ref, file, err)
	}
	return id, nil
}

// HostFile is a file read from this machine, placed at the same path in the image.
func HostFile(hostPath string, mode int64) (File, error) {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return File{}, fmt.Errorf("image file: %w", err)
	}
	return File{Path: hostPath, Mode: mode, Data: data}, nil
}
