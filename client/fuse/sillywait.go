package fuse

import (
	"context"
	"time"
)

// sillyWait bounds how long rmdir waits for files unlinked while open to
// be released. The kernel sends RELEASE after close(2) has returned, so a
// program that closes its files and removes their directory (rm -rf right
// after a job step) would otherwise find the directory holding the silly
// names of files it has already closed.
const sillyWait = 5 * time.Second

// sillyIn returns the done channels of the files open on this mount that
// hold a silly name in dir.
func (fsys *fileSystem) sillyIn(dir uint64) []chan struct{} {
	fsys.mu.Lock()
	open := make([]*openFile, 0, len(fsys.open))
	for _, of := range fsys.open {
		open = append(open, of)
	}
	fsys.mu.Unlock()
	var done []chan struct{}
	for _, of := range open {
		of.mu.Lock()
		for _, s := range of.silly {
			if s.parent == dir {
				done = append(done, of.done)
				break
			}
		}
		of.mu.Unlock()
	}
	return done
}

// awaitSilly waits, up to sillyWait, until the files open on this mount
// that hold silly names in dir have been released (and their names
// removed). It reports whether there were any and all were released; a
// file that a process really keeps open keeps the directory non-empty, as
// on NFS.
func (fsys *fileSystem) awaitSilly(ctx context.Context, dir uint64) bool {
	done := fsys.sillyIn(dir)
	if len(done) == 0 {
		return false
	}
	timer := time.NewTimer(sillyWait)
	defer timer.Stop()
	for _, ch := range done {
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}
