package mds

// LayoutRecaller is told about files whose layouts clients outside the
// MDS hold and must give back: the NFS front end (daemon/nfs) sends
// CB_LAYOUTRECALL to its pNFS clients and fences those that do not
// answer. The rebuild manager calls it where it decides to move a
// component off a data server that is up (drain, rebalance, the rebuild of
// a stale copy: a writer must let go first) and after it swapped the moved
// component in (readers must learn where it is now); setattr calls it
// after a cut of a file's size (its client cut the components first) and
// relayout after a restripe (a new generation). RecallLayouts must not
// block.
type LayoutRecaller interface {
	RecallLayouts(ino uint64)
}

// recallLayouts tells the recaller, if any, about file ino.
func (s *Server) recallLayouts(ino uint64) {
	if s.recall != nil {
		s.recall.RecallLayouts(ino)
	}
}
