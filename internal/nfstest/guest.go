package nfstest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
