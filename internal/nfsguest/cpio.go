package nfsguest

import (
	"fmt"
	"io"
)

// cpioWriter writes a "newc" cpio archive, the initramfs format.
type cpioWriter struct {
	w   io.Writer
	ino uint32
	err error
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	b := append([]byte(hdr), name...)
	b = append(b, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	_, c.err = c.w.Write(b)
}

func (c *cpioWriter) dir(name string)             { c.entry(name, 0o040755, nil) }
func (c *cpioWriter) file(name string, b []byte)  { c.entry(name, 0o100755, b) }
func (c *cpioWriter) symlink(name, target string) { c.entry(name, 0o120777, []byte(target)) }
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, nil)
	return c.err
}
