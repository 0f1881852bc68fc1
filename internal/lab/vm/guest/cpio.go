package guest

import (
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// newcWriter writes the "new ASCII" cpio format (newc), the one format the
// kernel unpacks an initramfs from. Every entry gets its own inode number and
// the time 0, so the same inputs make the same archive.
type newcWriter struct {
	w   io.Writer
	ino int
	err error
}

const newcMagic = "070701"

func (c *newcWriter) dir(name string) { c.entry(name, fs.ModeDir|0o755, nil) }

func (c *newcWriter) file(name string, perm fs.FileMode, data []byte) { c.entry(name, perm, data) }

func (c *newcWriter) symlink(name, target string) {
	c.entry(name, fs.ModeSymlink|0o777, []byte(target))
}

// close writes the trailer that ends the archive.
func (c *newcWriter) close() error {
	c.entry("TRAILER!!!", 0, nil)
	return c.err
}

func (c *newcWriter) entry(name string, mode fs.FileMode, data []byte) {
	if c.err != nil {
		return
	}
	name = strings.TrimPrefix(name, "/")
	c.ino++
	nlink := 1
	if mode.IsDir() {
		nlink = 2
	}
	hdr := fmt.Sprintf("%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		newcMagic, c.ino, unixMode(mode), 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr + name + "\x00"))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *newcWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

// pad aligns what follows n bytes to 4 bytes, as newc wants for names and data.
func (c *newcWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// unixMode is the st_mode of a file mode: its type bits and permissions.
func unixMode(m fs.FileMode) uint32 {
	t := uint32(0o100000) // regular
	switch {
	case m.IsDir():
		t = 0o040000
	case m&fs.ModeSymlink != 0:
		t = 0o120000
	}
	return t | uint32(m.Perm())
}
