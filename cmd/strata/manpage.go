package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runManPages writes the man pages, generated from the command table and
// each command's --help, into the directory args[0]: strata(1), one
// strata-COMMAND(1) per command and mount.fuse.strata(8).
func runManPages(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usageErrorf("__man", "want the output directory")
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	date := manDate(a.env("SOURCE_DATE_EPOCH"))
	write := func(name string, page []byte) error {
		return os.WriteFile(filepath.Join(dir, name), page, 0o644)
	}
	var usage bytes.Buffer
	a.usage(&usage)
	var b bytes.Buffer
	manHeader(&b, "strata", 1, date)
	fmt.Fprint(&b, ".SH NAME\nstrata \\- a storage service for Slurm clusters\n.SH SYNOPSIS\n.B strata\n.I COMMAND\n[flags] [args]\n.br\n.B strata \\-\\-version\n")
	fmt.Fprint(&b, ".SH DESCRIPTION\n")
	manText(&b, usage.String())
	fmt.Fprint(&b, ".SH COMMANDS\n")
	var see []string
	for _, c := range commands() {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s (strata\\-%s(1))\n", c.name, manEscape(c.summary), c.name)
		see = append(see, fmt.Sprintf(".BR strata\\-%s (1)", c.name))
	}
	fmt.Fprint(&b, ".SH FILES\n.TP\n/etc/strata/\nconfiguration of the daemons and the cluster secret\n.SH SEE ALSO\n")
	fmt.Fprintf(&b, "%s,\n.BR mount.fuse.strata (8)\n", strings.Join(see, ",\n"))
	if err := write("strata.1", b.Bytes()); err != nil {
		return err
	}
	for _, c := range commands() {
		var help bytes.Buffer
		h := *a
		h.stdout, h.stderr = &help, io.Discard
		_ = c.run(ctx, &h, []string{"--help"})
		b.Reset()
		manHeader(&b, "strata-"+c.name, 1, date)
		fmt.Fprintf(&b, ".SH NAME\nstrata\\-%s \\- %s\n.SH DESCRIPTION\n", c.name, manEscape(c.summary))
		manText(&b, help.String())
		fmt.Fprint(&b, ".SH SEE ALSO\n.BR strata (1)\n")
		if err := write("strata-"+c.name+".1", b.Bytes()); err != nil {
			return err
		}
	}
	b.Reset()
	manHeader(&b, mountHelperName, 8, date)
	fmt.Fprint(&b, ".SH NAME\nmount.fuse.strata \\- mount(8) helper for Strata file systems\n.SH SYNOPSIS\n.B mount.fuse.strata\n.I strata:MDS[:PORT][,MDS[:PORT]...] MOUNTPOINT\n[\\-sfnv] [\\-o options]\n.SH DESCRIPTION\n")
	manText(&b, mountHelperHelp)
	fmt.Fprint(&b, ".SH SEE ALSO\n.BR strata\\-mount (1),\n.BR mount (8),\n.BR fstab (5),\n.BR systemd.mount (5)\n")
	return write(mountHelperName+".8", b.Bytes())
}

// mountHelperHelp is mount.fuse.strata(8)'s description.
const mountHelperHelp = `mount(8) runs this helper (a link to the strata binary) for file systems
of type fuse.strata, so that Strata mounts from /etc/fstab like any other
file system:

  strata:mds1:7000,mds2:7000 /scratch fuse.strata defaults,_netdev 0 0

  mount /scratch          # or: mount -t fuse.strata strata:mds1:7000 /scratch
  umount /scratch

systemd's fstab generator makes scratch.mount of the line, ordered after
the network because of _netdev. The source names the MDS replicas, comma
separated, after "strata:". The helper checks the mount point, starts
'strata mount' in a session of its own and returns once the file system is
mounted, or prints the error that stopped it and exits 1. 'strata mount'
serves the mount until it is unmounted; its log goes to the journal when
systemd mounts it, else nowhere (run 'strata mount' in the foreground to
see it).

Options: defaults, auto, noauto, _netdev, nofail, user, rw, suid, dev,
exec, async and x-* are for mount(8) and systemd and are dropped; every
other option goes to 'strata mount -o' (see strata-mount(1)): ro, noatime,
nosuid, nodev, noexec, attr_timeout=, entry_timeout=, max_write=,
max_readahead=, write_behind=, direct_io, stream_min=, allow_other, debug. -f checks
the mount point and exits (fake), -v prints the strata mount command, -s
and -n are accepted and ignored.`

// manDate is the pages' date: SOURCE_DATE_EPOCH's (reproducible builds),
// else today.
func manDate(epoch string) string {
	t := time.Now().UTC()
	if sec, err := strconv.ParseInt(epoch, 10, 64); err == nil {
		t = time.Unix(sec, 0).UTC()
	}
	return t.Format("2006-01-02")
}

func manHeader(w io.Writer, name string, section int, date string) {
	fmt.Fprintf(w, ".TH %s %d %q \"strata %s\" \"Strata manual\"\n", manEscape(strings.ToUpper(name)), section, date, manEscape(version))
}

// manText writes text as is (no filling), escaped for roff.
func manText(w io.Writer, text string) {
	fmt.Fprint(w, ".nf\n")
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintln(w, manEscape(line))
	}
	fmt.Fprint(w, ".fi\n")
}

// manEscape escapes s for roff: backslashes, hyphens (as minus signs),
// and a leading dot or quote that would start a request.
func manEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
