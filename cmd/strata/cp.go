package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// localPrefixes are the prefixes that put a cp argument on this machine.
func localPrefixes() []string { return []string{"local:", "file:"} }

const cpAbout = `
Copy the file SRC to DST. Either side may be on this machine or in Strata:

  strata cp ./big.bin /proj/big.bin      this machine -> Strata
  strata cp /proj/big.bin ./back.bin     Strata -> this machine
  strata cp /proj/a strata:/proj/b       Strata -> Strata

Which side a path is on:
  - strata:PATH is in Strata; local:PATH (or file:PATH) is on this machine.
  - Without a prefix, SRC is on this machine if it starts with ./ or ../
    or exists here; otherwise it is in Strata.
  - Without a prefix, DST is on the other side from SRC.
So a Strata-to-Strata copy, or a Strata path that also exists on this
machine, needs the strata: prefix.

If DST is an existing directory (or ends in /), SRC is copied into it
under its own name. A new Strata file gets its directory's layout, or
--layout. A progress bar is drawn on stderr when stderr is a terminal.`

// endpoint is one side of a copy.
type endpoint struct {
	strata bool
	path   string
	arg    string // as the user wrote it, for messages
}

func (e endpoint) String() string {
	if e.strata {
		return "strata:" + e.path
	}
	return e.path
}

// classify decides the sides of cp's arguments (see cpAbout).
func classify(src, dst string) (endpoint, endpoint) {
	s, sok := forced(src)
	if !sok {
		local := strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../") || src == "." || src == ".."
		if !local {
			_, err := os.Lstat(src)
			local = err == nil
		}
		s = endpoint{strata: !local, path: src, arg: src}
	}
	d, dok := forced(dst)
	if !dok {
		d = endpoint{strata: !s.strata, path: dst, arg: dst}
	}
	return s, d
}

// forced parses an explicit strata: or local: prefix.
func forced(arg string) (endpoint, bool) {
	if p, ok := strings.CutPrefix(arg, strataPrefix); ok {
		return endpoint{strata: true, path: p, arg: arg}, true
	}
	for _, pre := range localPrefixes() {
		if p, ok := strings.CutPrefix(arg, pre); ok {
			return endpoint{path: p, arg: arg}, true
		}
	}
	return endpoint{}, false
}

func runCp(ctx context.Context, a *app, args []string) error {
	f := newFlags("cp", "SRC DST", cpAbout)
	spec := f.String("layout", "", "layout string for a new Strata file, e.g. width=4,unit=1M (default: inherited)")
	quiet := f.Bool("q", false, "no progress bar")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, 2); err != nil {
		return err
	}
	if *spec != "" {
		if _, err := layout.Parse(*spec); err != nil {
			return opError("cp", paths[1], err)
		}
	}
	src, dst := classify(paths[0], paths[1])
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		cp := copier{ctx: ctx, c: c, spec: *spec}
		if a.tty && !*quiet {
			cp.progress = a.stderr
		}
		return cp.copy(src, dst)
	})
}

// copier copies one file between the two sides.
type copier struct {
	ctx      context.Context
	c        *client.Client
	spec     string
	progress io.Writer // where to draw a progress bar; nil for none
}

// source is an open file to copy from.
type source interface {
	io.Reader
	io.Closer
}

func (cp *copier) copy(src, dst endpoint) error {
	in, size, perm, err := cp.open(src)
	if err != nil {
		return opError("cp", src.arg, err)
	}
	defer in.Close()
	if dir, err := cp.isDir(dst); err != nil {
		return opError("cp", dst.arg, err)
	} else if dir || strings.HasSuffix(dst.path, "/") {
		dst.path = joinPath(dst, baseName(src))
	}
	if same, err := cp.same(src, dst); err != nil {
		return opError("cp", dst.arg, err)
	} else if same {
		return opErrorAt("cp", src.arg+" "+dst.arg, rpc.Errorf(syscall.EINVAL, "source and destination are the same file"))
	}
	out, created, err := cp.create(dst, perm)
	if err != nil {
		return opError("cp", dst.String(), err)
	}
	bar := newProgress(cp.progress, baseName(src), size)
	err = transfer(out, in, bar)
	bar.finish(err == nil)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if created {
			_ = cp.remove(dst)
		}
		return opError("cp", dst.String(), err)
	}
	return nil
}

// open opens src and returns its size and permission bits.
func (cp *copier) open(src endpoint) (source, int64, uint32, error) {
	if src.strata {
		fl, err := cp.c.Open(cp.ctx, src.path)
		if err != nil {
			return nil, 0, 0, err
		}
		at, err := fl.Stat()
		if err != nil {
			fl.Close()
			return nil, 0, 0, err
		}
		return fl, fl.Size(), at.Mode & 0o777, nil
	}
	fl, err := os.Open(src.path)
	if err != nil {
		return nil, 0, 0, err
	}
	st, err := fl.Stat()
	if err != nil {
		fl.Close()
		return nil, 0, 0, err
	}
	if st.IsDir() {
		fl.Close()
		return nil, 0, 0, &os.PathError{Op: "open", Path: src.path, Err: fmt.Errorf("%w (copying directories is not supported)", syscall.EISDIR)}
	}
	return fl, st.Size(), uint32(st.Mode().Perm()), nil
}

func (cp *copier) isDir(e endpoint) (bool, error) {
	if e.strata {
		at, err := cp.c.Stat(cp.ctx, e.path)
		if errors.Is(err, syscall.ENOENT) {
			return false, nil
		}
		return err == nil && at.IsDir(), err
	}
	st, err := os.Stat(e.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && st.IsDir(), err
}

// same reports whether src and dst are the same existing file.
func (cp *copier) same(src, dst endpoint) (bool, error) {
	if src.strata != dst.strata {
		return false, nil
	}
	if src.strata {
		a, err := cp.c.Stat(cp.ctx, src.path)
		if err != nil {
			return false, err
		}
		b, err := cp.c.Stat(cp.ctx, dst.path)
		if errors.Is(err, syscall.ENOENT) {
			return false, nil
		}
		return err == nil && a.Ino == b.Ino, err
	}
	a, err := os.Stat(src.path)
	if err != nil {
		return false, err
	}
	b, err := os.Stat(dst.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && os.SameFile(a, b), err
}

// create opens dst for writing, truncated; created reports whether it is new.
func (cp *copier) create(dst endpoint, perm uint32) (io.WriteCloser, bool, error) {
	if dst.strata {
		_, err := cp.c.Lstat(cp.ctx, dst.path)
		created := errors.Is(err, syscall.ENOENT)
		fl, err := cp.c.OpenFileLayout(cp.ctx, dst.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm, cp.spec)
		if err != nil {
			return nil, false, err
		}
		return fl, created, nil
	}
	_, err := os.Lstat(dst.path)
	created := errors.Is(err, os.ErrNotExist)
	fl, err := os.OpenFile(dst.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(perm))
	if err != nil {
		return nil, false, err
	}
	return fl, created, nil
}

func (cp *copier) remove(e endpoint) error {
	if e.strata {
		return cp.c.Remove(context.WithoutCancel(cp.ctx), e.path)
	}
	return os.Remove(e.path)
}

// transfer copies in to out through the fast path of whichever side is
// a Strata file: its WriteTo or ReadFrom moves whole stripe rows with the
// columns in parallel, where io.Copy's 32 KiB reads would not.
func transfer(out io.Writer, in io.Reader, bar *progress) error {
	var err error
	switch {
	case isStrata(in):
		_, err = in.(io.WriterTo).WriteTo(&countingWriter{w: out, p: bar})
	case isStrata(out):
		_, err = out.(io.ReaderFrom).ReadFrom(&countingReader{r: in, p: bar})
	default:
		_, err = io.Copy(&countingWriter{w: out, p: bar}, in)
	}
	return err
}

func isStrata(v any) bool {
	_, ok := v.(*client.File)
	return ok
}

func baseName(e endpoint) string {
	if e.strata {
		return path.Base(path.Clean("/" + e.path))
	}
	return filepath.Base(e.path)
}

func joinPath(dir endpoint, name string) string {
	if dir.strata {
		return path.Join(dir.path, name)
	}
	return filepath.Join(dir.path, name)
}

func runCat(ctx context.Context, a *app, args []string) error {
	f := newFlags("cat", "PATH...", "Write the Strata files PATH to standard output, one after another.")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, -1); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for _, arg := range paths {
			fl, err := c.Open(ctx, strataPath(arg))
			if err != nil {
				return opError("cat", arg, err)
			}
			_, err = fl.WriteTo(a.stdout)
			if cerr := fl.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return opError("cat", arg, err)
			}
		}
		return nil
	})
}
