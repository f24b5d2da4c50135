package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// fakeMarks answers GetXattrIno with what answer says for the i-th call.
type fakeMarks struct {
	calls  int
	answer func(ctx context.Context, i int) ([]byte, error)
}

func (f *fakeMarks) GetXattrIno(ctx context.Context, _ uint64, _ string) ([]byte, error) {
	f.calls++
	return f.answer(ctx, f.calls)
}

// A tier MDS that is slow (its calls time out, which the RPC layer reports
// as unavailable) is not gone: the other nodes keep their part of the
// files it still drains (TestTierDrain lost every checkpoint under load
// when a timed-out read of the mark counted as "drained").
func TestMarkTimeoutIsNotGone(t *testing.T) {
	f := &fakeMarks{answer: func(ctx context.Context, _ int) ([]byte, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("%w: 10.0.0.1:1 mds.getxattr: timeout", rpc.ErrUnavailable)
	}}
	m := markReader{tc: f}
	deadline := time.Now().Add(mdsGoneAfter + 500*time.Millisecond)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		got := m.read(ctx)
		cancel()
		if got != "" {
			t.Fatalf("after %d timed-out calls the mark is %q, want none", f.calls, got)
		}
	}
}

// An MDS that refuses connections is gone at once (the first node stops
// it right after its mark); one whose calls fail otherwise is gone once
// they have failed for mdsGoneAfter, and an answer in between starts the
// count again.
func TestMarkRefusedIsGone(t *testing.T) {
	refused := fmt.Errorf("%w: 10.0.0.1:1 mds.getxattr: error when dialing 10.0.0.1:1: dial tcp4 10.0.0.1:1: connect: connection refused", rpc.ErrUnavailable)
	m := markReader{tc: &fakeMarks{answer: func(context.Context, int) ([]byte, error) { return nil, refused }}}
	if got := m.read(context.Background()); got != epilogDrained {
		t.Fatalf("mark %q from an MDS that refuses connections, want %q", got, epilogDrained)
	}

	reset := fmt.Errorf("%w: 10.0.0.1:1 mds.getxattr: read: connection reset by peer", rpc.ErrUnavailable)
	var answered time.Time
	f := &fakeMarks{answer: func(_ context.Context, i int) ([]byte, error) {
		if i == 3 {
			answered = time.Now()
			return nil, &rpc.Error{Errno: 61, Msg: "no mark yet"} // ENODATA: the MDS is there
		}
		return nil, reset
	}}
	m = markReader{tc: f}
	start := time.Now()
	got := ""
	for got == "" && time.Since(start) < 10*time.Second {
		got = m.read(context.Background())
		time.Sleep(50 * time.Millisecond)
	}
	if got != epilogDrained {
		t.Fatalf("mark %q after %v of failed calls, want %q", got, time.Since(start), epilogDrained)
	}
	// The failures before the answer do not count toward gone.
	if el := time.Since(answered); el < mdsGoneAfter {
		t.Errorf("gone %v after the MDS last answered, want at least %v of failures", el, mdsGoneAfter)
	}
}
