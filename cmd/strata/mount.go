package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/layout"
)

// mountProbeTimeout bounds the check that the MDS answers before mounting.
const mountProbeTimeout = 5 * time.Second

// unmountGrace is how long a stopping `strata mount` retries a busy
// unmount before it detaches the mount (lazy unmount).
const unmountGrace = 3 * time.Second

// detachedGrace is how long a stopping `strata mount` serves the processes
// of a mount it had to detach before it ends the connection: a stop ends
// the process within seconds, whatever still holds the mount.
const detachedGrace = 10 * time.Second

// optionList collects -o options, which may repeat and hold several
// comma-separated options each.
type optionList []string

func (o *optionList) String() string { return strings.Join(*o, ",") }

func (o *optionList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*o = append(*o, s)
		}
	}
	return nil
}

func runMount(ctx context.Context, a *app, args []string) error {
	// Started by the mount helper (mount -t fuse.strata): say "ok" once
	// mounted, or why not, on its ready pipe.
	ready := mountReady(a)
	err := mount(ctx, a, args, func() {
		if ready != nil {
			_, _ = ready.WriteString("ok\n")
			_ = ready.Close()
			ready = nil
		}
	})
	if ready != nil {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			_, _ = fmt.Fprintln(ready, describe(err))
		}
		_ = ready.Close()
	}
	return err
}

// mount is `strata mount`; it calls mounted once the file system is
// mounted, then serves it.
func mount(ctx context.Context, a *app, args []string, mounted func()) error {
	f := newFlags("mount", "MOUNTPOINT", `
Mount the Strata namespace on the directory MOUNTPOINT with FUSE and serve
it in the foreground until SIGINT or SIGTERM, or until 'strata umount
MOUNTPOINT' (or fusermount3 -u, umount) unmounts it. It prints nothing when
all is well. Any program can then use MOUNTPOINT as a POSIX file system:
close-to-open consistency, fcntl and flock locks that hold across mounts,
and the layout as the extended attribute user.strata.layout:
  strata mount --mds mds1:7000 /mnt/strata &
  setfattr -n user.strata.layout -v width=8,unit=4M /mnt/strata/run
  strata umount /mnt/strata
Permissions are checked by the kernel (default_permissions); with
--allow-other (the default) every user of the node can use the mount.
When stopped while a process still uses the mount, it retries for a few
seconds, then detaches the mount (lazy unmount) and serves that process
until it lets go.

-o takes mount options, comma separated: attr_timeout=SECONDS,
entry_timeout=SECONDS, max_write=SIZE, max_readahead=SIZE,
write_behind=SIZE, direct_io (bypass the page cache: cheaper large
sequential reads, nothing cached across opens), stream_min=SIZE|off
(read-only opens of files this large that are new to the mount, and
write-only opens, bypass the page cache; default 32M), allow_other, debug,
fsname=NAME, subtype=NAME; others
(ro, noatime, nosuid, nodev, noexec...) go to the kernel.`)
	mds := f.mdsFlag(a)
	def := fuse.DefaultOptions()
	attrTimeout := f.Duration("attr-timeout", def.AttrTimeout, "how long the kernel caches attributes (0: not at all)")
	entryTimeout := f.Duration("entry-timeout", def.EntryTimeout, "how long the kernel caches names (0: not at all)")
	allowOther := f.Bool("allow-other", def.AllowOther, "let every user of this node use the mount (--allow-other=false: only you)")
	debug := f.Bool("debug", false, "log every FUSE request (with --log-level debug)")
	secretFile := f.String("secret-file", "", "cluster secret `file`: the mount authenticates as its node and acts for each caller (default $STRATA_SECRET_FILE; see docs/security.md)")
	logLevel := f.String("log-level", "warn", "`level` of the log on stderr: debug, info, warn or error")
	fsname := f.String("fsname", def.FsName, "the `source` mount(8), findmnt and df show (fstab's first field, for mounts by mount -t fuse.strata)")
	var extra optionList
	f.Var(&extra, "o", "mount `options`, comma separated (see above)")
	pos, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(pos, 1, 1); err != nil {
		return err
	}
	opts := def
	opts.AttrTimeout, opts.EntryTimeout = *attrTimeout, *entryTimeout
	opts.AllowOther, opts.Debug = *allowOther, *debug
	opts.FsName = *fsname
	if err := applyMountOptions(&opts, extra); err != nil {
		return usageErrorf("mount", "-o: %v", err)
	}
	if *debug && *logLevel == "warn" {
		*logLevel = "debug"
	}
	log, err := newLogger(a.stderr, *logLevel)
	if err != nil {
		return usageErrorf("mount", "%v", err)
	}
	opts.Log = log
	opts.ProbeTimeout = mountProbeTimeout
	dir := pos[0]
	if err := checkMountDir(dir); err != nil {
		return err
	}
	return withClientSecret(ctx, a, mds(), *secretFile, func(c *client.Client) error {
		// Probe first, so that a dead MDS fails here with the CLI's
		// message, before anything is mounted.
		pctx, cancel := context.WithTimeout(ctx, mountProbeTimeout)
		_, err := c.StatFS(pctx)
		cancel()
		if err != nil {
			return err
		}
		srv, err := fuse.Mount(ctx, c, dir, opts)
		if err != nil {
			return opError("mount", dir, errors.New(strings.TrimPrefix(err.Error(), "fuse: ")))
		}
		mounted()
		return serveMount(ctx, a, srv)
	})
}

// serveMount waits until the mount goes away or ctx ends (a signal), then
// unmounts: a busy mount is retried for unmountGrace, then detached and
// served until its last user lets go or detachedGrace has passed, when its
// connection is ended.
func serveMount(ctx context.Context, a *app, srv *fuse.Server) error {
	select {
	case <-srv.Done():
		return nil // unmounted by strata umount, fusermount3 -u or umount
	case <-ctx.Done():
	}
	uctx, cancel := context.WithTimeout(context.Background(), unmountGrace)
	defer cancel()
	err := srv.Unmount(uctx, true)
	if errors.Is(err, fuse.ErrDetached) {
		fmt.Fprintf(a.stderr, "strata mount: %s is busy: detached it (lazy unmount); serving the processes that still use it for %v more\n", srv.Dir(), detachedGrace)
		select {
		case <-srv.Done():
		case <-time.After(detachedGrace):
			if err := srv.Abort(); err != nil {
				return opError("umount", srv.Dir(), err)
			}
			fmt.Fprintf(a.stderr, "strata mount: %s was still in use: ended its connection (its users get ENOTCONN); what they wrote before is kept\n", srv.Dir())
		}
		srv.Wait()
		return nil
	}
	if err != nil {
		return opError("umount", srv.Dir(), err)
	}
	return nil
}

// checkMountDir checks that dir is a directory, with the message a user
// can act on.
func checkMountDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return opError("mount", dir, errors.New("no such directory (create the mount point first)"))
	case err != nil:
		return opError("mount", dir, err)
	case !fi.IsDir():
		return opError("mount", dir, errors.New("not a directory (the mount point must be a directory)"))
	}
	return nil
}

// applyMountOptions applies -o options to opts.
func applyMountOptions(opts *fuse.Options, list []string) error {
	for _, o := range list {
		k, v, hasValue := strings.Cut(o, "=")
		var err error
		switch k {
		case "attr_timeout", "entry_timeout":
			var sec float64
			if sec, err = strconv.ParseFloat(v, 64); err == nil && sec >= 0 {
				d := time.Duration(sec * float64(time.Second))
				if k == "attr_timeout" {
					opts.AttrTimeout = d
				} else {
					opts.EntryTimeout = d
				}
			} else {
				err = fmt.Errorf("%s=%q: want seconds, like 1 or 0.5", k, v)
			}
		case "max_write", "max_readahead", "write_behind":
			var n int64
			if n, err = layout.ParseSize(v); err != nil {
				err = fmt.Errorf("%s=%q: want a size like 1M", k, v)
				break
			}
			switch k {
			case "max_write":
				opts.MaxWrite = int(n)
			case "max_readahead":
				opts.MaxReadahead = int(n)
			default:
				opts.WriteBehind = n
			}
		case "stream_min":
			if v == "off" {
				opts.StreamMin = -1
				break
			}
			var n int64
			if n, err = layout.ParseSize(v); err != nil || n <= 0 {
				err = fmt.Errorf("%s=%q: want a size like 32M, or off", k, v)
				break
			}
			opts.StreamMin = n
		case "allow_other":
			opts.AllowOther = true
		case "direct_io":
			opts.DirectIO = true
		case "debug":
			opts.Debug = true
		case "fsname":
			opts.FsName = v
		case "subtype":
			opts.Name = v
		case "default_permissions":
			// Always on.
		default:
			if hasValue && v == "" {
				err = fmt.Errorf("%q: empty value", o)
			}
			opts.Extra = append(opts.Extra, o)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func runUmount(ctx context.Context, a *app, args []string) error {
	f := newFlags("umount", "MOUNTPOINT", `
Unmount the Strata (FUSE) mount on MOUNTPOINT; the 'strata mount' serving
it then exits. If a process still has a file open or its working
directory in the mount, it fails with "target is busy" and the mount keeps
working: try again when that process is done, or detach the mount now
with -l (lazy: it disappears at once, and is served until the process lets
go).`)
	lazy := f.Bool("l", false, "lazy: detach the mount even if it is busy")
	pos, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(pos, 1, 1); err != nil {
		return err
	}
	dir := pos[0]
	err = fuse.Unmount(dir, *lazy)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fuse.ErrBusy):
		return opError("umount", dir, errors.New("target is busy (a process has a file open or its working directory in it; try again when it is done, or use -l)"))
	case errors.Is(err, fuse.ErrNotMounted):
		abs, _ := filepath.Abs(dir)
		return opError("umount", dir, fmt.Errorf("not a FUSE mount point: %s", abs))
	}
	return opError("umount", dir, err)
}
