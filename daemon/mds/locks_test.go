package mds

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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
	tb := lockTable{}
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
	// Dropping a session drops its locks only.
	tb.dropSession(b)
	if c := tb.get(a, 7, lk(wr, 50, 149, 1)); c.Type != un {
		t.Fatalf("b's locks outlived its session: %+v", c)
	}
	if c := tb.get(b, 7, rpc.Lock{Type: wr, Owner: 1, Flock: true, End: rpc.LockEOF}); c.Type != rd {
		t.Fatalf("a's flock lock went with b's session: %+v", c)
	}
}

// TestLockTableCopyOnWrite: a captured table (a snapshot) never sees later
// changes.
func TestLockTableCopyOnWrite(t *testing.T) {
	tb := lockTable{}
	if err := tb.set(1, 7, lk(wr, 0, 9, 1)); err != nil {
		t.Fatal(err)
	}
	snap := maps.Clone(tb)
	before := fmt.Sprint(snap)
	_ = tb.set(1, 7, lk(un, 3, 4, 1))
	_ = tb.set(2, 7, lk(rd, 20, 30, 1))
	tb.release(1, 7, 1)
	tb.dropSession(2)
	if after := fmt.Sprint(snap); after != before {
		t.Fatalf("snapshot changed from %s to %s", before, after)
	}
}

func TestLeases(t *testing.T) {
	var now atomic.Int64
	l := newLeases(time.Second, func() time.Time { return time.Unix(0, now.Load()) })
	l.takeOffice()
	held := map[uint64]bool{1: true, 2: true, 3: true}
	l.renew(1)
	now.Add(int64(600 * time.Millisecond))
	l.renew(2)
	if got := l.lapsed(held); len(got) != 0 {
		t.Fatalf("lapsed after 0.6s = %v", got)
	}
	now.Add(int64(600 * time.Millisecond)) // 1: 1.2s, 2: 0.6s, 3 (never seen): 1.2s since office
	got := l.lapsed(held)
	slices.Sort(got)
	if !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("lapsed = %v, want [1 3]", got)
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

// TestLocksSurviveRestart: granted locks are in the FSM, so a restart of
// the MDS (from the log, and from a snapshot) keeps them; their sessions
// get one lease from the restart to renew, and lose them if they do not.
func TestLocksSurviveRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			m := startMDS(t, cfg)
			m.fakeDSes(1)
			f := m.createF(rpc.RootIno, "f", "")
			must[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 21, Ino: f, Lock: lk(wr, 0, 99, 1)})
			must[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 22, Ino: f, Lock: rpc.Lock{Type: rd, Owner: 2, Flock: true, End: rpc.LockEOF}})
			if snapshot {
				if err := m.node.raft.Snapshot().Error(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			m2 := startMDS(t, cfg)
			_, err := call[rpc.Empty](m2, rpc.MLockSet, &rpc.LockReq{Session: 23, Ino: f, Lock: lk(rd, 50, 50, 1)})
			if !errors.Is(err, syscall.EAGAIN) {
				t.Fatalf("lock over a lock granted before the restart: %v, want EAGAIN", err)
			}
			got := must[rpc.LockResp](m2, rpc.MLockGet, &rpc.LockReq{Session: 23, Ino: f, Lock: rpc.Lock{Type: wr, Owner: 3, Flock: true, End: rpc.LockEOF}})
			if got.Lock.Type != rd || !got.Lock.Flock {
				t.Fatalf("flock after restart = %+v, want session 22's read flock", got.Lock)
			}
			// Session 21 renews; 22 does not and lapses after one lease.
			must[rpc.SessionResp](m2, rpc.MSessionRenew, &rpc.SessionReq{Session: 21})
			eventually(t, 10*time.Second, "session 22's flock to lapse", func() bool {
				must[rpc.SessionResp](m2, rpc.MSessionRenew, &rpc.SessionReq{Session: 21})
				_, err := call[rpc.Empty](m2, rpc.MLockSet, &rpc.LockReq{Session: 23, Ino: f, Lock: rpc.Lock{Type: wr, Owner: 3, Flock: true, End: rpc.LockEOF}})
				return err == nil
			})
			if _, err := call[rpc.Empty](m2, rpc.MLockSet, &rpc.LockReq{Session: 23, Ino: f, Lock: lk(rd, 50, 50, 1)}); !errors.Is(err, syscall.EAGAIN) {
				t.Fatalf("renewed session 21 lost its lock: %v", err)
			}
		})
	}
}

// TestLocksDroppedWithFile: unlinking a file drops its locks.
func TestLocksDroppedWithFile(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	f := m.createF(rpc.RootIno, "f", "")
	must[rpc.Empty](m, rpc.MLockSet, &rpc.LockReq{Session: 31, Ino: f, Lock: lk(wr, 0, 9, 1)})
	must[rpc.Empty](m, rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: "f"})
	m.fsm.mu.RLock()
	n := len(m.fsm.st.locks)
	m.fsm.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d inodes still hold locks after the unlink", n)
	}
}
