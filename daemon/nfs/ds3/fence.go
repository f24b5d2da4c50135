package ds3

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// Fencing (RFC 8435 section 2.2). The synthetic AUTH_SYS identity of a
// layout names a fence epoch: SynthUID(epoch, write). When a client does
// not return a recalled layout in time, the front end fences it: it tells
// the data servers of the file's components to refuse that epoch's
// identities for those components (FenceProg, signed with the cluster
// secret) and hands out layouts of a new epoch. The old client's READ,
// WRITE and COMMIT then get NFS3ERR_ACCES, so it returns the layout and
// asks the MDS for a new one. A fence is kept for FenceTTL: by then the
// component has moved (its old copy is gone) or the client's lease ended.

// Synthetic identities: uid SynthUID(epoch, write), gid GID.
const (
	uidBase    = 0x60000000
	epochMask  = 1<<24 - 1
	GID        = 0x5fff0000
	FenceTTL   = 10 * time.Minute
	FenceProg  = 0x20535452 // "STR": the front end's fence calls
	fenceVers  = 1
	fenceProc  = 1
	fenceValid = time.Minute // how long a signed fence call may be replayed
)

// SynthUID is the synthetic uid of a layout of the given fence epoch,
// for reading or for writing.
func SynthUID(epoch uint32, write bool) uint32 {
	u := uidBase + (epoch&epochMask)<<1
	if write {
		u |= 1
	}
	return u
}

// parseUID returns the epoch and the write bit of a synthetic uid.
func parseUID(uid uint32) (epoch uint32, write, ok bool) {
	if uid < uidBase || uid > uidBase+epochMask<<1|1 {
		return 0, false, false
	}
	d := uid - uidBase
	return d >> 1, d&1 == 1, true
}

// FenceKey names one component of one layout generation of a file.
type FenceKey struct {
	Ino  uint64
	Gen  uint64
	Comp uint32
}

// fences is a data server's table of refused epochs.
type fences struct {
	mu sync.Mutex
	m  map[FenceKey]map[uint32]time.Time // refused epoch -> until
}

// refused reports whether epoch is fenced off component k at now.
func (f *fences) refused(k FenceKey, epoch uint32, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.m[k][epoch]
	return ok && now.Before(until)
}

// add refuses epoch on k until until, and forgets fences that ended.
func (f *fences) add(k FenceKey, epoch uint32, now, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, es := range f.m {
		for e, u := range es {
			if !now.Before(u) {
				delete(es, e)
			}
		}
		if len(es) == 0 {
			delete(f.m, key)
		}
	}
	if f.m == nil {
		f.m = map[FenceKey]map[uint32]time.Time{}
	}
	if f.m[k] == nil {
		f.m[k] = map[uint32]time.Time{}
	}
	f.m[k][epoch] = until
}

// fenceBody encodes what a fence call says: the key, the epoch refused
// and until when the call is valid.
func fenceBody(k FenceKey, epoch uint32, valid int64) []byte {
	w := xdr.NewWriter(nil)
	w.Uint64(k.Ino)
	w.Uint64(k.Gen)
	w.Uint32(k.Comp)
	w.Uint32(epoch)
	w.Int64(valid)
	return w.Bytes()
}

// fenceMAC signs a fence call's body with the cluster secret.
func fenceMAC(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("strata-ds3-fence"))
	m.Write(body)
	return m.Sum(nil)
}

// fenceArgs encodes a signed fence call.
func fenceArgs(secret []byte, k FenceKey, epoch uint32, valid time.Time) []byte {
	body := fenceBody(k, epoch, valid.UnixNano())
	w := xdr.NewWriter(nil)
	w.Fixed(body)
	w.Opaque(fenceMAC(secret, body))
	return w.Bytes()
}

// Fence statuses.
const (
	fenceOK     = 0
	fenceDenied = 1
)

// serveFence serves a FenceProg call.
func (s *Server) serveFence(call *oncrpc.Call, r *xdr.Reader, w *xdr.Writer) uint32 {
	if call.Vers != fenceVers {
		return oncrpc.ProgMismatch
	}
	if call.Proc == 0 {
		return oncrpc.Success
	}
	if call.Proc != fenceProc {
		return oncrpc.ProcUnavail
	}
	var k FenceKey
	k.Ino = r.Uint64()
	k.Gen = r.Uint64()
	k.Comp = r.Uint32()
	epoch := r.Uint32()
	validNs := r.Int64()
	mac := r.Opaque(64)
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	now, valid := time.Now(), time.Unix(0, validNs)
	if now.After(valid) || valid.Sub(now) > 2*fenceValid || !hmac.Equal(mac, fenceMAC(s.cfg.Secret, fenceBody(k, epoch, validNs))) {
		w.Uint32(fenceDenied)
		return oncrpc.Success
	}
	s.fence.add(k, epoch, now, now.Add(s.cfg.FenceTTL))
	s.fenced.Add(1)
	s.log.Info("ds3_fenced", "inode", k.Ino, "gen", k.Gen, "comp", k.Comp, "epoch", epoch)
	w.Uint32(fenceOK)
	return oncrpc.Success
}

// ErrFenceDenied is returned when a data server refuses a fence call.
var ErrFenceDenied = errors.New("ds3: fence refused")

// Fence asks the NFSv3 service at addr to refuse epoch's identities on
// component k from now on (for FenceTTL).
func Fence(ctx context.Context, addr string, secret []byte, k FenceKey, epoch uint32) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("ds3 fence %s: %w", addr, err)
	}
	c := oncrpc.NewConn(nc, oncrpc.ConnConfig{MaxRecord: 4096, MaxInflight: 1}, refuseCalls{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Serve(ctx)
	}()
	defer func() {
		_ = c.Close()
		<-done
	}()
	res, err := c.Call(ctx, FenceProg, fenceVers, fenceProc, nil, fenceArgs(secret, k, epoch, time.Now().Add(fenceValid)))
	if err != nil {
		return fmt.Errorf("ds3 fence %s: %w", addr, err)
	}
	r := xdr.NewReader(res)
	if st := r.Uint32(); r.Err() != nil || st != fenceOK {
		return fmt.Errorf("%w by %s", ErrFenceDenied, addr)
	}
	return nil
}

// refuseCalls serves no calls: a fence connection only sends them.
type refuseCalls struct{}

func (refuseCalls) ServeRPC(context.Context, *oncrpc.Conn, *oncrpc.Call, *xdr.Reader, *xdr.Writer) uint32 {
	return oncrpc.ProgUnavail
}
