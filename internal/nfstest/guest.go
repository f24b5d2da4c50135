package nfstest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/nfsguest"
)

var (
	guestOnce sync.Once
	guest     *nfsguest.Guest
	guestErr  error
	guestDir  string
)

// Guest prepares the qemu guest once per test binary. A host without qemu
// or the kernel fails the test (contrib/test-deps.sh installs them); it
// does not skip. With -short the test is skipped: each boot takes seconds
// to minutes under software emulation.
func Guest(t testing.TB) *nfsguest.Guest {
	t.Helper()
	if testing.Short() {
		t.Skip("boots the Linux kernel under qemu: not with -short")
	}
	guestOnce.Do(func() {
		guestDir, guestErr = os.MkdirTemp("", "strata-nfsguest-")
		if guestErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var bin string
		bin, guestErr = nfsguest.BuildProgram(ctx, guestDir, "github.com/strata-hpc/strata/internal/nfsguest/guest")
		if guestErr != nil {
			return
		}
		guest, guestErr = nfsguest.Prepare(guestDir, bin)
	})
	if guestErr != nil {
		t.Fatalf("prepare the kernel guest: %v", guestErr)
	}
	return guest
}

// Cleanup removes what Guest built; call it from TestMain.
func Cleanup() {
	if guestDir != "" {
		_ = os.RemoveAll(guestDir)
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
