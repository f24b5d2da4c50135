package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

func runLs(ctx context.Context, a *app, args []string) error {
	f := newFlags("ls", "[PATH...]", `
List each directory PATH (default /), one entry per line in name order; a
PATH that is not a directory is listed itself. Names starting with "." are
hidden unless -a is given.`)
	long := f.Bool("l", false, "long format: mode, links, owner, group, size in bytes, mtime, name")
	all := f.Bool("a", false, "also list names starting with \".\"")
	human := f.Bool("h", false, "with -l, sizes like 1.5M instead of bytes")
	dirOnly := f.Bool("d", false, "list directories themselves, not their contents")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		paths = []string{"/"}
	}
	lf := &lsFormat{long: *long, human: *human, names: map[uint32]string{}, groups: map[uint32]string{}, now: time.Now()}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		var failed error
		for i, arg := range paths {
			p := strataPath(arg)
			a0, err := c.Lstat(ctx, p)
			if err == nil && a0.IsSymlink() && !*long && !*dirOnly {
				a0, err = c.Stat(ctx, p) // ls follows a symlink named on the command line
			}
			if errors.Is(err, rpc.ErrUnavailable) {
				return err
			}
			if err != nil {
				failed = opError("ls", arg, err)
				fmt.Fprintln(a.stderr, "strata: "+describe(failed))
				continue
			}
			if !a0.IsDir() || *dirOnly {
				lf.print(ctx, a.stdout, c, []lsEntry{{name: arg, path: p, attr: *a0}})
				continue
			}
			ents, err := c.ReadDirIno(ctx, a0.Ino)
			if err != nil {
				failed = opError("ls", arg, err)
				fmt.Fprintln(a.stderr, "strata: "+describe(failed))
				continue
			}
			if !*all {
				ents = visible(ents)
			}
			if len(paths) > 1 {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				fmt.Fprintf(a.stdout, "%s:\n", arg)
			}
			list := make([]lsEntry, len(ents))
			for i, e := range ents {
				list[i] = lsEntry{name: e.Name, path: path.Join(p, e.Name), attr: e.Attr}
			}
			lf.print(ctx, a.stdout, c, list)
		}
		if failed != nil {
			return errReported{failed}
		}
		return nil
	})
}

// errReported is an error already printed; Main prints nothing more but
// the exit status is still 1.
type errReported struct{ error }

func visible(ents []rpc.DirEntry) []rpc.DirEntry {
	out := ents[:0]
	for _, e := range ents {
		if !strings.HasPrefix(e.Name, ".") {
			out = append(out, e)
		}
	}
	return out
}

// lsEntry is one line of ls: the name shown, its Strata path, attributes.
type lsEntry struct {
	name string
	path string
	attr rpc.Attr
}

// lsFormat prints entries, short or long.
type lsFormat struct {
	long, human   bool
	names, groups map[uint32]string // uid and gid name caches
	now           time.Time
}

func (lf *lsFormat) print(ctx context.Context, w io.Writer, c *client.Client, ents []lsEntry) {
	if !lf.long {
		for _, e := range ents {
			fmt.Fprintln(w, printable(e.name))
		}
		return
	}
	rows := make([][]string, 0, len(ents))
	for _, e := range ents {
		name := printable(e.name)
		if e.attr.IsSymlink() {
			if t, err := c.Readlink(ctx, e.path); err == nil {
				name += " -> " + printable(t)
			}
		}
		size := strconv.FormatUint(e.attr.Size, 10)
		switch {
		case rpc.IsDevice(e.attr.Mode):
			size = devString(e.attr.Rdev) // where ls puts a device's numbers
		case lf.human:
			size = humanSize(e.attr.Size)
		}
		rows = append(rows, []string{
			modeString(e.attr.Mode), strconv.FormatUint(uint64(e.attr.Nlink), 10),
			lf.owner(e.attr.Uid), lf.group(e.attr.Gid), size, lf.time(e.attr.Mtime), name,
		})
	}
	// Numbers right-aligned, names left-aligned, the last column as is.
	right := []bool{false, true, false, false, true, false, false}
	width := make([]int, 7)
	for _, r := range rows {
		for i, s := range r {
			width[i] = max(width[i], len(s))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, s := range r {
			switch {
			case i == len(r)-1:
				b.WriteString(s)
			case right[i]:
				fmt.Fprintf(&b, "%*s ", width[i], s)
			default:
				fmt.Fprintf(&b, "%-*s ", width[i], s)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

func (lf *lsFormat) owner(uid uint32) string {
	if n, ok := lf.names[uid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	lf.names[uid] = n
	return n
}

func (lf *lsFormat) group(gid uint32) string {
	if n, ok := lf.groups[gid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(n); err == nil {
		n = g.Name
	}
	lf.groups[gid] = n
	return n
}

// time formats an mtime as ls does: month, day and time for the last six
// months, month, day and year otherwise.
func (lf *lsFormat) time(ns int64) string {
	t := time.Unix(0, ns)
	if t.After(lf.now.AddDate(0, -6, 0)) && t.Before(lf.now.Add(time.Hour)) {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

// modeString formats a POSIX mode as ls does: "drwxr-xr-x".
func modeString(mode uint32) string {
	b := []byte("?rwxrwxrwx")
	switch mode & rpc.TypeMask {
	case rpc.TypeFile:
		b[0] = '-'
	case rpc.TypeDir:
		b[0] = 'd'
	case rpc.TypeSymlink:
		b[0] = 'l'
	case rpc.TypeFifo:
		b[0] = 'p'
	case rpc.TypeChar:
		b[0] = 'c'
	case rpc.TypeBlock:
		b[0] = 'b'
	case rpc.TypeSocket:
		b[0] = 's'
	}
	for i := range 9 {
		if mode&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	special := []struct {
		bit      uint32
		pos      int
		set, not byte
	}{{0o4000, 3, 's', 'S'}, {0o2000, 6, 's', 'S'}, {0o1000, 9, 't', 'T'}}
	for _, s := range special {
		if mode&s.bit != 0 {
			if b[s.pos] == '-' {
				b[s.pos] = s.not
			} else {
				b[s.pos] = s.set
			}
		}
	}
	return string(b)
}

// devString formats a device number as ls does: "major, minor".
func devString(rdev uint32) string {
	return fmt.Sprintf("%d, %d", rpc.Major(rdev), rpc.Minor(rdev))
}

// humanSize formats bytes with a binary suffix and one decimal below 10:
// 0, 512, 1.5K, 64M, 3.6T.
func humanSize(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + string(units[i])
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + string(units[i])
}
