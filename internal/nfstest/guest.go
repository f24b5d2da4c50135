package nfstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/nfsguest"
)

// prepared is a guest built once per test binary.
type prepared struct {
	once sync.Once
	g    *nfsguest.Guest
	err  error
	dir  string
}

var (
	plain      prepared // the guest program only
	withStrata prepared // and the strata command with fusermount3
)

// Guest prepares the qemu guest once per test binary. A host without qemu
// or the kernel fails the test (contrib/test-deps.sh installs them); it
// does not skip. With -short the test is skipped: each boot takes seconds
// to minutes under software emulation.
func Guest(t testing.TB) *nfsguest.Guest {
	t.Helper()
	return plain.get(t, false)
}

// StrataGuest is Guest with the static strata command as /bin/strata and
// the host's fusermount3 (with its libraries) in the guest too, for a
// `strata mount` inside the guest (the guest program's "bigio ... strata"
// run, with nfsguest.Options.HostLoopback).
func StrataGuest(t testing.TB) *nfsguest.Guest {
	t.Helper()
	return withStrata.get(t, true)
}

func (p *prepared) get(t testing.TB, strata bool) *nfsguest.Guest {
	t.Helper()
	if testing.Short() {
		t.Skip("boots the Linux kernel under qemu: not with -short")
	}
	p.once.Do(func() {
		p.dir, p.err = os.MkdirTemp("", "strata-nfsguest-")
		if p.err != nil {
			return
		}
		// Building the strata command from scratch takes minutes on a
		// loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		var bin string
		bin, p.err = nfsguest.BuildProgram(ctx, p.dir, "github.com/strata-hpc/strata/internal/nfsguest/guest")
		if p.err != nil {
			return
		}
		var progs []string
		if strata {
			fm, err := exec.LookPath("fusermount3")
			if err != nil {
				p.err = fmt.Errorf("%w: fusermount3 (apt-get install fuse3)", nfsguest.ErrMissing)
				return
			}
			s, err := nfsguest.BuildProgram(ctx, p.dir, "github.com/strata-hpc/strata/cmd/strata")
			if err != nil {
				p.err = err
				return
			}
			progs = []string{s, fm}
		}
		p.g, p.err = nfsguest.Prepare(p.dir, bin, progs...)
	})
	if p.err != nil {
		t.Fatalf("prepare the kernel guest: %v", p.err)
	}
	return p.g
}

// Cleanup removes what Guest and StrataGuest built; call it from TestMain.
func Cleanup() {
	for _, p := range []*prepared{&plain, &withStrata} {
		if p.dir != "" {
			_ = os.RemoveAll(p.dir)
		}
	}
	if cliDir != "" {
		_ = os.RemoveAll(cliDir)
	}
}

// CheckGuest logs the guest's lines and fails the test unless it mounted,
// every step passed and its program exited 0.
func CheckGuest(t testing.TB, res *nfsguest.Result, err error) {
	t.Helper()
	if res != nil {
		for _, l := range res.Lines {
			t.Log(l)
		}
	}
	if err != nil {
		console := ""
		if res != nil {
			console = res.Console
		}
		t.Fatalf("guest: %v\n%s", err, console)
	}
	if !res.Has("MOUNT OK") {
		t.Fatalf("the kernel client did not mount:\n%s", res.Console)
	}
	if f := res.Grep("FAIL"); len(f) > 0 {
		t.Errorf("guest steps failed: %q", f)
	}
	if !res.Has("EXIT 0") {
		t.Errorf("guest program did not exit 0")
	}
}

// Mountstat returns the count of op in the guest's mountstats, -1 if
// absent.
func Mountstat(res *nfsguest.Result, op string) int {
	for _, l := range res.Grep("mountstats:") {
		f := strings.Fields(strings.TrimPrefix(l, "mountstats:"))
		if len(f) > 1 && f[0] == op+":" {
			var n int
			fmt.Sscan(f[1], &n)
			return n
		}
	}
	return -1
}

// Running is a guest program started with Start.
type Running struct {
	done chan struct{}
	res  *nfsguest.Result
	err  error
}

// Start runs the guest with o in the background until it ends or ctx does.
func Start(ctx context.Context, g *nfsguest.Guest, o nfsguest.Options) *Running {
	r := &Running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = g.Run(ctx, o)
	}()
	return r
}

// WaitMarker waits up to d until file name holds want, read through c
// (the guest writes markers to tell the host how far it got). The test
// fails if the guest ends or d passes first.
func (r *Running) WaitMarker(t testing.TB, ctx context.Context, c *client.Client, name, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if b, err := TryRead(ctx, c, name); err == nil && string(b) == want {
			return
		}
		select {
		case <-r.done:
			CheckGuest(t, r.res, r.err)
			t.Fatalf("the guest ended before %s held %q", name, want)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not hold %q within %v", name, want, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Check waits for the guest to end and checks it as CheckGuest does.
func (r *Running) Check(t testing.TB) {
	t.Helper()
	<-r.done
	CheckGuest(t, r.res, r.err)
}
