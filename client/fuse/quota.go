package fuse

import (
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// quotaGrant is how far an open file may grow before its owner's or its
// project's byte quota, as the MDS last said (rpc.MQuotaRoom). The MDS
// counts only committed sizes, so a file grows on this mount, past what
// it has committed, for up to a close before the MDS sees it; asking at
// the write that grows the file past the grant makes that write fail with
// EDQUOT, as Lustre's grants do, rather than only the close. It is advice:
// other files' uncommitted writes are not counted, and the LAYOUTCOMMIT at
// close, which the MDS refuses past a limit, decides. Guarded by
// openFile.mu.
type quotaGrant struct {
	known bool
	end   uint64 // the largest size the quotas allow
}

// roomFor refuses with EDQUOT a write that would grow the file to end
// bytes past what its quotas allow. The MDS is asked only when end passes
// the last grant; an MDS that does not answer (or predates the call)
// leaves the decision to the commit.
func (of *openFile) roomFor(end uint64) error {
	of.mu.Lock()
	g := of.quota
	of.mu.Unlock()
	if g.known && end <= g.end || end <= of.size() {
		return nil
	}
	r, err := of.fsys.c.QuotaRoom(of.fsys.ctx, of.ino)
	g = quotaGrant{known: true, end: ^uint64(0)}
	if err != nil {
		of.fsys.log.Debug("quota room unknown: the commit decides", "inode", of.ino, "err", err)
	} else if r.Room != rpc.NoQuotaLimit && r.Size+r.Room >= r.Size {
		g.end = r.Size + r.Room
	}
	of.mu.Lock()
	of.quota = g
	of.mu.Unlock()
	if end > g.end {
		return fmt.Errorf("inode %d: a write to %d bytes passes its owner's or project's byte quota (room up to %d bytes): %w", of.ino, end, g.end, syscall.EDQUOT)
	}
	return nil
}
