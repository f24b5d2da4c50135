package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// app is one run of the command line: its standard streams and what it
// reads of the environment. Only this package reads env, files and flags.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// tty reports whether stderr is a terminal (progress bars).
	tty bool
	// introspect, when set, receives each command's flag set in place
	// of parsing it: the man pages and the bash completion list flags.
	introspect func(*cmdFlags)
	// stdlog makes a daemon's logger the process's default (slog.SetDefault),
	// so that lines libraries write with the log package are structured at
	// its level too. Only Main sets it: it is process-wide.
	stdlog bool
}

// Main runs the strata command line with args (without the program name)
// and returns what failed, after printing it on stderr as one line.
// SIGINT and SIGTERM cancel the context commands run with.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, tty: isTerminal(stderr), stdlog: true}
	return a.main(ctx, args)
}

// main dispatches to a command and reports its error.
func (a *app) main(ctx context.Context, args []string) error {
	err := a.dispatch(ctx, args)
	var done errReported
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.As(err, &done) {
		fmt.Fprintln(a.stderr, "strata: "+describe(err))
	}
	return err
}

func (a *app) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		a.usage(a.stderr)
		return usageErrorf("", "no command given")
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			return a.dispatch(ctx, []string{args[1], "--help"})
		}
		a.usage(a.stdout)
		return flag.ErrHelp
	case "--version", "-version", "-V":
		return runVersion(ctx, a, args[1:])
	case mountHelperName:
		// Not in the command table: mount(8) runs it (see mounthelper.go).
		return runMountHelper(ctx, a, args[1:])
	case "__man":
		// Not in the command table: `make deb` writes the man pages.
		return runManPages(ctx, a, args[1:])
	case "__completion":
		// Not in the command table: `make deb` writes the bash completion.
		return runCompletion(ctx, a, args[1:])
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, a, args[1:])
		}
	}
	return usageErrorf("", "unknown command %q (run 'strata help' for the list)", name)
}

// command is one subcommand.
type command struct {
	name    string
	group   string // daemons, files, layout, cluster, about
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// commands is the table of subcommands, in the order help lists them.
func commands() []command {
	return []command{
		{"dev", "daemons", "run an MDS, data servers and the admin API on loopback, in one process", runDev},
		{"mds", "daemons", "run a metadata server", runMDS},
		{"ds", "daemons", "run a data server", runDS},
		{"mount", "daemons", "mount the namespace with FUSE, in the foreground", runMount},
		{"umount", "daemons", "unmount a Strata mount", runUmount},
		{"agent", "daemons", "run a compute node's agent: job tiers for Slurm", runAgent},
		{"ls", "files", "list directories", runLs},
		{"stat", "files", "show a file's attributes", runStat},
		{"mkdir", "files", "make directories", runMkdir},
		{"rm", "files", "remove files and directories", runRm},
		{"mv", "files", "move or rename a file or directory", runMv},
		{"cp", "files", "copy a file between this machine and Strata, either way", runCp},
		{"cat", "files", "write files to standard output", runCat},
		{"ln", "files", "make a hard or symbolic link", runLn},
		{"readlink", "files", "print a symbolic link's target", runReadlink},
		{"touch", "files", "create empty files or update their times", runTouch},
		{"truncate", "files", "set the size of files", runTruncate},
		{"chmod", "files", "change permission bits", runChmod},
		{"chown", "files", "change the owner (and group) of files", runChown},
		{"chgrp", "files", "change the group of files", runChgrp},
		{"setstripe", "layout", "set the layout of a directory or an empty file", runSetstripe},
		{"getstripe", "layout", "show a file's layout or a directory's policy", runGetstripe},
		{"mpiio", "layout", "MPI-IO hints: a ROMIO hints file for a layout, check hints", runMPIIO},
		{"df", "cluster", "show capacity, use and data servers", runDf},
		{"quota", "cluster", "show or set user and project quotas (like lfs quota)", runQuota},
		{"qos", "cluster", "bandwidth sharing: status, show or set the QoS policy, the Slurm controller", runQoS},
		{"tier", "cluster", "job tiers: check a spec, show tiers, wait for a drain", runTier},
		{"admin", "cluster", "administer the cluster: MDS replicas, rebuild, scrub, data servers", runAdmin},
		{"version", "about", "print the version, and whether the MPI-IO shim and SPANK plugin match it", runVersion},
	}
}

func (a *app) usage(w io.Writer) {
	fmt.Fprint(w, "strata: a storage service for Slurm clusters\n\nUsage: strata COMMAND [flags] [args]\n")
	groups := map[string][]command{}
	for _, c := range commands() {
		groups[c.group] = append(groups[c.group], c)
	}
	titles := map[string]string{"daemons": "Daemons", "files": "Files", "layout": "Layouts", "cluster": "Cluster", "about": "About"}
	order := []string{"daemons", "files", "layout", "cluster", "about"}
	for _, g := range order {
		fmt.Fprintf(w, "\n%s:\n", titles[g])
		for _, c := range groups[g] {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
Client commands talk to the MDS at --mds, else $STRATA_MDS, else 127.0.0.1:7000
(where 'strata dev' listens). Run 'strata COMMAND --help' for a command's flags.
`)
}

// exitCode maps Main's error to the process exit status: 0 on success or
// --help, 2 for a usage error, 1 for anything else.
func exitCode(err error) int {
	var u *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// env returns the environment variable name, trimmed.
func (a *app) env(name string) string { return strings.TrimSpace(a.getenv(name)) }
