package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"syscall"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

func runMkdir(ctx context.Context, a *app, args []string) error {
	f := newFlags("mkdir", "PATH...", `
Make each directory PATH. Without -p the parent must exist and PATH must not.`)
	parents := f.Bool("p", false, "make missing parents; an existing directory is no error")
	mode := f.String("m", "755", "permission bits, octal")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, -1); err != nil {
		return err
	}
	perm, err := parseMode(f, *mode)
	if err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for _, arg := range paths {
			mk := c.Mkdir
			if *parents {
				mk = c.MkdirAll
			}
			if err := mk(ctx, strataPath(arg), perm); err != nil {
				return opError("mkdir", arg, err)
			}
		}
		return nil
	})
}

func parseMode(f *cmdFlags, s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, usageErrorf(f.name, "mode %q: want octal permission bits like 755", s)
	}
	return uint32(m), nil
}

func runRm(ctx context.Context, a *app, args []string) error {
	f := newFlags("rm", "PATH...", `
Remove each PATH: a file, a symbolic link or an empty directory. A
directory that is not empty needs -r.`)
	recursive := f.Bool("r", false, "remove directories and everything below them")
	f.BoolVar(recursive, "R", false, "same as -r")
	force := f.Bool("f", false, "a missing PATH is no error")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 && !*force {
		return f.nargs(paths, 1, -1)
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for _, arg := range paths {
			p := strataPath(arg)
			if path.Clean("/"+p) == "/" {
				return opError("rm", arg, errors.New("refusing to remove the root directory"))
			}
			var err error
			if *recursive {
				if _, err = c.Lstat(ctx, p); err == nil {
					err = c.RemoveAll(ctx, p)
				}
			} else {
				err = c.Remove(ctx, p)
			}
			if err != nil && !(*force && errors.Is(err, syscall.ENOENT)) {
				return opError("rm", arg, err)
			}
		}
		return nil
	})
}

func runMv(ctx context.Context, a *app, args []string) error {
	f := newFlags("mv", "SRC DST", `
Rename SRC to DST within Strata, replacing DST if it is a file (or an empty
directory when SRC is a directory). If DST is an existing directory, SRC
moves into it. Moving a directory into itself is an error.`)
	noClobber := f.Bool("n", false, "do not replace an existing DST")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, 2); err != nil {
		return err
	}
	src, dst := strataPath(paths[0]), strataPath(paths[1])
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		if at, err := c.Stat(ctx, dst); err == nil && at.IsDir() {
			dst = path.Join(dst, path.Base(path.Clean("/"+src)))
		}
		var err error
		if *noClobber {
			err = c.RenameFlags(ctx, src, dst, rpc.RenameNoReplace)
		} else {
			err = c.Rename(ctx, src, dst)
		}
		if err != nil {
			return opErrorAt("mv", paths[0]+" "+paths[1], err)
		}
		return nil
	})
}

func runLn(ctx context.Context, a *app, args []string) error {
	f := newFlags("ln", "TARGET LINK", `
Make LINK a hard link to the file TARGET, or with -s a symbolic link whose
content is TARGET (stored as given, not checked).`)
	sym := f.Bool("s", false, "make a symbolic link")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, 2); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		var err error
		if *sym {
			err = c.Symlink(ctx, paths[0], strataPath(paths[1]))
		} else {
			err = c.Link(ctx, strataPath(paths[0]), strataPath(paths[1]))
		}
		return opError("ln", paths[1], err)
	})
}

func runReadlink(ctx context.Context, a *app, args []string) error {
	f := newFlags("readlink", "PATH", "Print the target of the symbolic link PATH.")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, 1); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		t, err := c.Readlink(ctx, strataPath(paths[0]))
		if err != nil {
			return opError("readlink", paths[0], err)
		}
		fmt.Fprintln(a.stdout, t)
		return nil
	})
}

func runTouch(ctx context.Context, a *app, args []string) error {
	f := newFlags("touch", "PATH...", `
Create each PATH as an empty file if it does not exist (with the layout its
directory gives), else set its access and modification times to now.`)
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
			p := strataPath(arg)
			_, err := c.Stat(ctx, p)
			switch {
			case err == nil:
				err = c.Touch(ctx, p) // the MDS's now: anyone who may write may
			case errors.Is(err, syscall.ENOENT):
				var fl *client.File
				if fl, err = c.OpenFile(ctx, p, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
					err = fl.Close()
				}
			}
			if err != nil {
				return opError("touch", arg, err)
			}
		}
		return nil
	})
}

func runTruncate(ctx context.Context, a *app, args []string) error {
	f := newFlags("truncate", "-s SIZE PATH...", `
Set the size of each file PATH to SIZE (bytes, or with a K, M, G or T
suffix); a file grows with zeros. A missing PATH is created.`)
	sizeArg := f.String("s", "", "the new size, e.g. 0, 4096, 10M (required)")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if *sizeArg == "" {
		return usageErrorf(f.name, "-s SIZE is required")
	}
	size, err := layout.ParseSize(*sizeArg)
	if err != nil {
		return usageErrorf(f.name, "%v", err)
	}
	if err := f.nargs(paths, 1, -1); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for _, arg := range paths {
			fl, err := c.OpenFile(ctx, strataPath(arg), os.O_WRONLY|os.O_CREATE, 0o644)
			if err == nil {
				err = fl.Truncate(size)
				if cerr := fl.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return opError("truncate", arg, err)
			}
		}
		return nil
	})
}

func runChmod(ctx context.Context, a *app, args []string) error {
	f := newFlags("chmod", "MODE PATH...", "Set the permission bits of each PATH to MODE (octal, e.g. 644).")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, -1); err != nil {
		return err
	}
	perm, err := parseMode(f, paths[0])
	if err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for _, arg := range paths[1:] {
			if err := c.Chmod(ctx, strataPath(arg), perm); err != nil {
				return opError("chmod", arg, err)
			}
		}
		return nil
	})
}
