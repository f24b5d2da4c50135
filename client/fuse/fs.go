package fuse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// sillyPrefix starts the name a file unlinked while open gets until its
// last close.
const sillyPrefix = ".strata-open-"

// fileSystem is the state of one mount shared by its nodes and handles.
type fileSystem struct {
	c     *client.Client
	ctx   context.Context // lives as long as the mount: every RPC but a lock wait runs with it
	opts  Options
	log   *slog.Logger
	errs  limiter
	wb    *budget // write-behind data in flight; writers wait for it
	wbufs wbufs   // free write-behind buffers, for the next ones
	rab   *budget // blocks read ahead; taken only when free, never waited for
	rabs  raBufs  // buffers of batches read ahead, for the next batches
	dc    *dirCache
	da    *dirAttrs // directory attributes the MDS answered changes with
	xa    noXattrs  // inodes known to have no extended attributes

	// directMmap is set once the kernel has granted
	// FUSE_DIRECT_IO_ALLOW_MMAP: opens may stream (stream.go).
	directMmap atomic.Bool

	// bg counts the write-behind goroutines; shutdown waits for them.
	bg sync.WaitGroup

	mu    sync.Mutex
	open  map[uint64]*openFile // inodes with open handles on this mount
	locks map[lockKey]bool     // lock owners that hold (or held) locks here
	seq   uint64               // silly-rename counter
}

func newFileSystem(ctx context.Context, c *client.Client, opts Options) *fileSystem {
	fsys := &fileSystem{
		c:     c,
		ctx:   ctx,
		opts:  opts,
		log:   opts.Log,
		errs:  limiter{log: opts.Log, every: time.Second},
		wb:    newBudget(opts.WriteBehind),
		rab:   newBudget(opts.WriteBehind),
		rabs:  make(raBufs, raKeep),
		open:  map[uint64]*openFile{},
		locks: map[lockKey]bool{},
	}
	fsys.dc = newDirCache(fsys, min(opts.EntryTimeout, opts.AttrTimeout))
	fsys.da = newDirAttrs(opts.AttrTimeout)
	fsys.xa.ttl = opts.AttrTimeout
	return fsys
}

// blksize is the st_blksize the mount reports: the request size.
func (fsys *fileSystem) blksize() uint32 { return uint32(fsys.opts.MaxWrite) }

// acquire returns the open state of ino with one more reference, waiting
// for a state that is being closed to finish first.
func (fsys *fileSystem) acquire(ino uint64) *openFile {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	for {
		of := fsys.open[ino]
		if of == nil {
			of = newOpenFile(fsys, ino)
			fsys.open[ino] = of
		}
		if of.refs > 0 || !of.closing {
			of.refs++
			return of
		}
		done := of.done
		fsys.mu.Unlock()
		<-done
		fsys.mu.Lock()
	}
}

// opened returns the open state of ino, or nil if no handle is open.
func (fsys *fileSystem) opened(ino uint64) *openFile {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if of := fsys.open[ino]; of != nil && of.refs > 0 {
		return of
	}
	return nil
}

// release drops a reference; the last one writes back, syncs and closes
// the inode's files.
func (fsys *fileSystem) release(of *openFile) error {
	fsys.mu.Lock()
	of.refs--
	last := of.refs == 0
	if last {
		of.closing = true
	}
	fsys.mu.Unlock()
	if !last {
		return nil
	}
	err := of.close()
	fsys.mu.Lock()
	if fsys.open[of.ino] == of {
		delete(fsys.open, of.ino)
	}
	close(of.done)
	fsys.mu.Unlock()
	return err
}

// getattr returns the attributes of ino from the MDS merged with what
// this mount knows and the MDS does not yet: the size of data written
// here and not yet committed, and links taken away by silly renames. An
// inode that is gone on the MDS but still open here shows its last
// attributes with no links.
func (fsys *fileSystem) getattr(ino uint64) (*rpc.Attr, error) {
	a, err := fsys.c.Getattr(fsys.ctx, ino)
	of := fsys.opened(ino)
	switch {
	case err != nil && of != nil && errors.Is(err, syscall.ENOENT):
		a = of.lastAttr()
		a.Nlink = 0
		return a, nil
	case err != nil:
		return nil, err
	}
	fsys.xa.note(a)
	if of != nil {
		of.merge(a)
	}
	return a, nil
}

// merge applies merged local knowledge to attributes the MDS sent.
func (fsys *fileSystem) merge(a *rpc.Attr) {
	fsys.xa.note(a)
	if !a.IsFile() {
		return
	}
	if of := fsys.opened(a.Ino); of != nil {
		of.merge(a)
	}
}

// sillyName returns a fresh name for an open file that is unlinked.
func (fsys *fileSystem) sillyName(ino uint64) string {
	fsys.mu.Lock()
	fsys.seq++
	n := fsys.seq
	fsys.mu.Unlock()
	return fmt.Sprintf("%s%x-%x", sillyPrefix, ino, n)
}

func isSilly(name string) bool { return strings.HasPrefix(name, sillyPrefix) }

// shutdown writes back and closes what is still open when the kernel
// connection ends (the kernel does not send every release at unmount),
// then waits for the write-behind goroutines.
func (fsys *fileSystem) shutdown() {
	fsys.mu.Lock()
	var left []*openFile
	for _, of := range fsys.open {
		if of.refs > 0 {
			of.refs = 0
			of.closing = true
			left = append(left, of)
		}
	}
	fsys.mu.Unlock()
	for _, of := range left {
		if err := of.close(); err != nil {
			fsys.log.Warn("write back at unmount failed", "inode", of.ino, "err", err)
		}
		fsys.mu.Lock()
		delete(fsys.open, of.ino)
		close(of.done)
		fsys.mu.Unlock()
	}
	fsys.bg.Wait()
}

// budget bounds the memory of some of the mount's buffers.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire takes n bytes, waiting while others hold the budget; a request
// larger than the whole budget runs alone.
func (b *budget) acquire(n int64) {
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.limit {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

// tryAcquire takes n bytes if they are free now.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// held returns the bytes taken now.
func (b *budget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}
