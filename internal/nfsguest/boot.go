package nfsguest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Forward maps a guest TCP address (e.g. "10.0.2.101:2049") to a host
// loopback address the guest's connections are relayed to.
type Forward struct {
	Guest string
	Host  string
}

// Options describe one guest run.
type Options struct {
	Server   string    // host address of the NFS server (guest 10.0.2.100:2049)
	Export   string    // path to mount; default "/"
	MountOpt string    // mount options, e.g. "vers=4.1"
	Args     []string  // arguments of the guest program (no spaces or commas)
	Forwards []Forward // more forwards (pNFS data servers)
	MemMiB   int       // guest RAM; default 256
	// ModuleParams are parameters of the guest's kernel modules, as
	// "module.param=value" (e.g. "nfs_layout_flexfiles.dataserver_timeo=30").
	ModuleParams []string
	// HostLoopback lets the guest reach the host's loopback addresses as
	// they are (127.0.0.1:PORT is the host's port): qemu's network is not
	// restricted, the guest's own loopback address is removed and 127/8
	// is routed to qemu. A Strata client in the guest then reaches the MDS
	// and the data servers at the addresses a test cluster on the host
	// advertises.
	HostLoopback bool
	Timeout      time.Duration
	// Console, if set, gets a copy of the guest's console as it is
	// printed (Run returns the whole console once the guest ends), to
	// watch a long run.
	Console io.Writer
}

// Guest is a prepared guest: a kernel and an initramfs holding a test
// program. It is safe to Run concurrently.
type Guest struct {
	k       *kernel
	vmlinux string
	initrd  string
}

// Prepare builds the initramfs with guestBin (a static binary) in dir,
// and each host program of progs as /bin/NAME with the shared libraries
// it needs (ldd). The extracted kernel is cached in the user's cache
// directory.
func Prepare(dir, guestBin string, progs ...string) (*Guest, error) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, fmt.Errorf("%w: qemu-system-x86_64 (apt-get install qemu-system-x86)", ErrMissing)
	}
	k, err := findKernel()
	if err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	g := &Guest{k: k, vmlinux: k.vmlinux(filepath.Join(cache, "strata-nfsguest")), initrd: filepath.Join(dir, "initramfs.cpio.gz")}
	if err := buildInitramfs(k, guestBin, progs, g.initrd); err != nil {
		return nil, err
	}
	return g, nil
}

// BuildProgram compiles the Go package pkg as a static Linux binary
// (without symbols) into dir, named after the package's last element, and
// returns its path.
func BuildProgram(ctx context.Context, dir, pkg string) (string, error) {
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w: %s", pkg, err, b)
	}
	return out, nil
}

// Result is what a guest run printed.
type Result struct {
	Console string   // everything
	Lines   []string // the lines starting with "GUEST "
}

// Has reports whether a GUEST line starts with prefix (after "GUEST ").
func (r *Result) Has(prefix string) bool {
	for _, l := range r.Lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// Grep returns the GUEST lines (without "GUEST ") that start with prefix.
func (r *Result) Grep(prefix string) []string {
	var out []string
	for _, l := range r.Lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// Run boots the guest and returns its console once it powers off, the
// timeout passes or ctx ends.
func (g *Guest) Run(ctx context.Context, o Options) (*Result, error) {
	if o.MemMiB == 0 {
		o.MemMiB = 256
	}
	if o.Timeout == 0 {
		o.Timeout = 8 * time.Minute
	}
	if o.Export == "" {
		o.Export = "/"
	}
	fwd := []Forward{{Guest: "10.0.2.100:2049", Host: o.Server}}
	fwd = append(fwd, o.Forwards...)
	net := "user,id=n0,restrict=on,net=10.0.2.0/24,host=10.0.2.2"
	hostlo := ""
	if o.HostLoopback {
		net = strings.Replace(net, "restrict=on", "restrict=off", 1)
		hostlo = " guest.hostlo=1"
	}
	for _, f := range fwd {
		i := strings.LastIndex(f.Host, ":")
		if i < 0 {
			return nil, fmt.Errorf("nfsguest: forward host %q has no port", f.Host)
		}
		// One relay process per guest connection (pNFS, reconnects),
		// unlike the chardev form which carries a single connection.
		net += fmt.Sprintf(",guestfwd=tcp:%s-cmd:busybox nc %s %s", f.Guest, f.Host[:i], f.Host[i+1:])
	}
	appendLine := fmt.Sprintf("console=ttyS0 panic=-1 quiet loglevel=4 no_timer_check guest.opts=%s guest.path=%s guest.args=%s%s %s",
		o.MountOpt, o.Export, strings.Join(o.Args, ","), hostlo, strings.Join(o.ModuleParams, " "))
	// no_timer_check: on a host loaded enough to starve the emulation the
	// kernel's IO-APIC timer check fails and it panics at boot.
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64",
		"-accel", "tcg,thread=single,tb-size=64", "-cpu", "max", "-m", fmt.Sprint(o.MemMiB), "-smp", "1",
		"-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio",
		"-kernel", g.vmlinux, "-initrd", g.initrd, "-append", appendLine,
		"-netdev", net, "-device", "virtio-net-pci,netdev=n0,romfile=")
	var out syncBuffer
	var w io.Writer = &out
	if o.Console != nil {
		w = io.MultiWriter(&out, o.Console)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := &Result{Console: out.String()}
	for _, l := range strings.Split(res.Console, "\n") {
		l = strings.TrimRight(l, "\r")
		if i := strings.Index(l, "GUEST "); i >= 0 {
			res.Lines = append(res.Lines, l[i+len("GUEST "):])
		}
	}
	if !res.Has("POWEROFF") {
		return res, fmt.Errorf("nfsguest: guest did not finish (qemu: %v)", err)
	}
	return res, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
