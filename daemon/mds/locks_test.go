package mds

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

func lk(typ uint32, start, end, owner uint64) rpc.Lock {
	return rpc.Lock{Type: typ, Start: start, End: end, Owner: owner, Pid: uint32(owner)}
}

const (
	rd = syscall.F_RDLCK
	wr = syscall.F_WRLCK
	un = syscall.F_UNLCK
)

func TestLockTable(t *testing.T) {
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	tb := newLockTable(time.Second, clock)
	const a, b = 1, 2 // sessions
	set := func(s uint64, l rpc.Lock) error { return tb.set(s, 7, l) }
	mustSet := func(s uint64, l rpc.Lock) {
		t.Helper()
		if err := set(s, l); err != nil {
			t.Fatalf("set %+v by %d: %v", l, s, err)
		}
	}
	conflicts := func(s uint64, l rpc.Lock) bool {
		t.Helper()
		return tb.get(s, 7, l).Type != un
	}

	mustSet(a, lk(rd, 0, 99, 1))
	mustSet(b, lk(rd, 50, 149, 1)) // readers share
	if err := set(b, lk(wr, 90, 120, 1)); errnoOf(err) != syscall.EAGAIN || !strings.Contains(err.Error(), "bytes 0-99") {
		t.Fatalf("write over another's read lock: %v", err)
	}
	if got := tb.get(b, 7, lk(wr, 90, 120, 1)); got.Type != rd || got.Start != 0 || got.End != 99 || got.Pid != 1 {
		t.Fatalf("F_GETLK = %+v, want a's read lock 0-99", got)
	}
	// Another owner in the same session is another owner.
	if !conflicts(a, lk(wr, 10, 10, 2)) {
		t.Fatal("owner 2 of session a does not conflict with owner 1's read lock")
	}
	// Upgrade part of one's own read lock: it splits.
	mustSet(a, lk(un, 0, 99, 1))
	mustSet(a, lk(rd, 0, 49, 1))
	mustSet(a, lk(wr, 10, 19, 1))
	if !conflicts(b, lk(rd, 15, 15, 1)) || conflicts(b, lk(rd, 5, 5, 1)) || conflicts(b, lk(rd, 25, 25, 1)) {
		t.Fatal("upgrade of 10-19 did not split the read lock 0-49")
	}
	// Unlock the middle of a write lock: both ends stay locked.
	mustSet(a, lk(un, 12, 17, 1))
	if !conflicts(b, lk(rd, 10, 11, 1)) || conflicts(b, lk(rd, 12, 17, 1)) || !conflicts(b, lk(rd, 18, 19, 1)) {
		t.Fatal("unlocking 12-17 of 10-19")
	}
	// Locks to EOF, merging of adjacent ranges.
	mustSet(a, lk(wr, 1000, rpc.LockEOF, 1))
	mustSet(a, lk(wr, 500, 999, 1))
	if got := tb.get(b, 7, lk(rd, 1<<40, 1<<40, 1)); got.Start != 500 || got.End != rpc.LockEOF {
		t.Fatalf("merged lock = %+v, want 500-EOF", got)
	}
	// flock and POSIX locks do not meet.
	if err := set(b, rpc.Lock{Type: wr, Owner: 9, Flock: true, End: rpc.LockEOF}); err != nil {
		t.Fatalf("flock beside POSIX locks: %v", err)
	}
	if err := set(a, rpc.Lock{Type: rd, Owner: 3, Flock: true, End: rpc.LockEOF}); errnoOf(err) != syscall.EAGAIN {
		t.Fatalf("flock over another's flock: %v", err)
	}
	// Release at close drops the owner's locks only.
	tb.release(b, 7, 9)
	if err := set(a, rpc.Lock{Type: rd, Owner: 3, Flock: true, End: rpc.LockEOF}); err != nil {
		t.Fatalf("flock after release: %v", err)
	}
	tb.release(a, 7, 1)
	if !conflicts(a, lk(wr, 60, 60, 5)) {
		t.Fatal("releasing b's flock owner dropped b's POSIX read lock 50-149")
	}
	if c := tb.get(b, 7, lk(wr, 0, 49, 5)); c.Type != un {
		t.Fatalf("a's locks survived release: %+v", c)
	}
	// A lapsed lease drops the session's locks.
	tb.renew(a)
	now.Add(int64(500 * time.Millisecond))
	tb.renew(a)
	now.Add(int64(800 * time.Millisecond)) // b last seen 1.3s ago, a 0.8s
	if c := tb.get(a, 7, lk(wr, 50, 149, 1)); c.Type != un {
		t.Fatalf("b's locks outlived its lease: %+v", c)
	}
	if c := tb.get(b, 7, rpc.Lock{Type: wr, Owner: 1, Flock: true, End: rpc.LockEOF}); c.Type != rd {
		t.Fatalf("a's renewed flock lock is gone: %+v", c)
	}
}

func TestLocksOverRPC(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	f := m.createF(rpc.RootIno, "f", "")
	ttl := must[rpc.SessionResp](m, rpc.MSessionRenew, &rpc.SessionReq{Session: 11})
	if ttl.TTLMs != 2000 {
		t.Fatalf("lease %d ms, want the heartbeat timeout", ttl.TTLMs)
	}
	must[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 11, Ino: f, Lock: lk(wr, 0, 9, 1)})
	_, err := call[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 12, Ino: f, Lock: lk(rd, 5, 5, 1)})
	if !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("conflicting lock over RPC: %v", err)
	}
	got := must[rpc.LockResp](m, rpc.MLockGet, &rpc.LockReq{Session: 12, Ino: f, Lock: lk(rd, 5, 5, 1)})
	if got.Lock.Type != wr || got.Lock.End != 9 {
		t.Fatalf("F_GETLK over RPC = %+v", got.Lock)
	}
	must[rpc.Empty](m, rpc.MLockRelease, &rpc.LockReq{Session: 11, Ino: f, Lock: rpc.Lock{Owner: 1}})
	must[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 12, Ino: f, Lock: lk(rd, 5, 5, 1)})
	for _, bad := range []rpc.Lock{{Type: 99}, lk(rd, 10, 5, 1)} {
		if _, err := call[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 12, Ino: f, Lock: bad}); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("lock %+v: %v, want EINVAL", bad, err)
		}
	}
	if _, err := call[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 12, Ino: 9999, Lock: lk(rd, 0, 1, 1)}); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lock on a missing inode: %v", err)
	}
}
