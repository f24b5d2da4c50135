package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

func runStat(ctx context.Context, a *app, args []string) error {
	f := newFlags("stat", "PATH...", `
Show the attributes of each PATH: type, size, inode, links, mode, owner,
times and, for a file, its layout generation; for a device node, its
device numbers (major,minor). A symbolic link is shown
itself unless -L is given.`)
	follow := f.Bool("L", false, "follow symbolic links")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, -1); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for i, arg := range paths {
			p := strataPath(arg)
			stat := c.Lstat
			if *follow {
				stat = c.Stat
			}
			at, err := stat(ctx, p)
			if err != nil {
				return opError("stat", arg, err)
			}
			target := ""
			if at.IsSymlink() {
				if target, err = c.Readlink(ctx, p); err != nil {
					return opError("stat", arg, err)
				}
			}
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			printStat(a.stdout, p, at, target)
		}
		return nil
	})
}

func printStat(w io.Writer, p string, at *rpc.Attr, target string) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	defer tw.Flush()
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("path", printable(p))
	line("type", typeName(at.Mode))
	if target != "" {
		line("target", printable(target))
	}
	size := strconv.FormatUint(at.Size, 10)
	if at.Size >= 1024 {
		size += " (" + humanSize(at.Size) + ")"
	}
	line("size", size)
	line("inode", strconv.FormatUint(at.Ino, 10))
	line("links", strconv.FormatUint(uint64(at.Nlink), 10))
	line("mode", fmt.Sprintf("%04o (%s)", at.Mode&0o7777, modeString(at.Mode)))
	line("uid", strconv.FormatUint(uint64(at.Uid), 10))
	line("gid", strconv.FormatUint(uint64(at.Gid), 10))
	if rpc.IsDevice(at.Mode) {
		line("device", fmt.Sprintf("%d,%d", rpc.Major(at.Rdev), rpc.Minor(at.Rdev)))
	}
	if at.IsFile() {
		line("layout generation", strconv.FormatUint(at.Gen, 10))
	}
	for _, t := range []struct {
		k  string
		ns int64
	}{{"access", at.Atime}, {"modify", at.Mtime}, {"change", at.Ctime}} {
		line(t.k, time.Unix(0, t.ns).Format("2006-01-02 15:04:05.000000000 -0700"))
	}
}

func typeName(mode uint32) string {
	switch mode & rpc.TypeMask {
	case rpc.TypeFile:
		return "regular file"
	case rpc.TypeDir:
		return "directory"
	case rpc.TypeSymlink:
		return "symbolic link"
	case rpc.TypeFifo:
		return "fifo"
	case rpc.TypeChar:
		return "character special file"
	case rpc.TypeBlock:
		return "block special file"
	case rpc.TypeSocket:
		return "socket"
	}
	return fmt.Sprintf("unknown (%#o)", mode&rpc.TypeMask)
}
