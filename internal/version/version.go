// Package version is netshift's release: the version the binaries report and
// the tag config/default gives the image (a test keeps the two equal).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is this release of netshift.
const Version = "0.1.0"

// Info is what `netshift version` prints.
type Info struct {
	Version string `json:"version"`
	// Commit is the source's git commit when the binary was built from a
	// checkout (Go records it), with "-dirty" when it had changes; empty when
	// built without one (the Dockerfile's context has no .git).
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get reads the build's own record.
func Get() Info {
	i := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(i.Commit) > 12 {
		i.Commit = i.Commit[:12]
	}
	if dirty && i.Commit != "" {
		i.Commit += "-dirty"
	}
	return i
}

// String is the one line people read.
func (i Info) String() string {
	s := "netshift " + i.Version
	if i.Commit != "" {
		s += " (commit " + i.Commit + ")"
	}
	return fmt.Sprintf("%s %s %s", s, i.GoVersion, i.Platform)
}
