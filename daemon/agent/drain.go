package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/jobtier"
	"github.com/strata-hpc/strata/qos"
)

// Drains run on the tier's first node. While the job runs, a scanner walks
// the tier's namespace through its MDS every ScanInterval (metadata only,
// pruned to the directories a rule can match) and drains a file that
// matches a rule once its size and mtime have not changed for DrainSettle.
// The MDS learns a file's size and mtime when a writer commits it, at
// fsync and close (close-to-open), so a settled file is one its writers
// have closed (or fsynced and left alone). A file that changes after it was
// drained is drained again; an empty file waits for the final drain. The
// epilog's final drain takes every matching file whose current version is
// not drained yet, settled or not.
//
// Why not a callback from the mount on close: each node's mount is a
// separate `strata mount` process (so that the mount outlives an agent
// restart), and the writers of a file may sit on any node; the tier's MDS
// sees every node's commits in one place.
//
// A drain reads the file from the tier, writes it next to its destination
// under a temporary name as the job's user, reads that back and compares
// CRC32C checksums, then renames it into place: the destination never
// holds a partial file. Then the tier file gets the extended attribute
// user.strata.drained ("MTIME SIZE CRC32C DEST", the version that is safe)
// which `strata tier drain --wait` polls. A failed drain is retried
// (Retries, with backoff) without holding up the others; a file whose data
// sits on a data server that is down is lost (listed in the registry, and
// user.strata.drain_error, "MTIME SIZE MESSAGE", says why).

// Extended attributes a drain leaves on a tier file.
const (
	drainedXattr  = "user.strata.drained"
	drainErrXattr = "user.strata.drain_error"
)

// drainer runs one tier's drains.
type drainer struct {
	s    *Server
	t    *tier
	id   identity
	tc   *client.Client // the tier, as root: reads and xattrs
	gc   *client.Client // the global namespace, creating as the user
	lim  *limiter
	jobs chan drainJob

	mu       sync.Mutex
	seen     map[string]observed // scanned files not drained yet
	inflight map[string]bool
	dirty    bool // drain records changed since the last save
	pending  sync.WaitGroup
	// queuedBytes is the size of the files queued or being drained.
	queuedBytes uint64

	reports  *drainReporter // backlog reports (drainbacklog.go)
	reported chan struct{}  // closed when the report goroutine stops

	cancel     context.CancelFunc // stops the scanner and the workers
	cancelScan context.CancelFunc // stops the scanner
	scanned    chan struct{}      // closed when the scanner stops
	workers    sync.WaitGroup
}

// maxQueued bounds the files queued for drain workers; more wait for the
// next scan.
const maxQueued = 1 << 14

// observed is a file's version as a scan saw it, and since when.
type observed struct {
	size  uint64
	mtime int64
	since time.Time
}

// drainJob is one file to drain.
type drainJob struct {
	rel   string
	ino   uint64
	size  uint64
	mtime int64
	dest  jobtier.Location
}

// startDrainer starts the scanner and workers of t (first node, drain
// rules given) as t.drain.
func (s *Server) startDrainer(t *tier, id identity) {
	if len(t.spec.Drain) == 0 || t.drain != nil {
		return
	}
	t.drain = s.newDrainer(t, id)
}

// newDrainer starts a drainer of t, or returns nil (logged) when t has no
// drain rules or its clients cannot be made.
func (s *Server) newDrainer(t *tier, id identity) *drainer {
	if len(t.spec.Drain) == 0 {
		return nil
	}
	tc, err := client.New(client.Config{MDS: t.st.MDSAddr, Timeout: 10 * time.Second, FailoverTimeout: 2 * time.Second, Cred: rpc.Cred{Uid: t.st.UID, Gid: t.st.GID}, Auth: t.tierCreds})
	if err != nil {
		s.log.Error("drainer_not_started", "job_id", t.st.Job, "err", err)
		return nil
	}
	gc, err := t.globalClient(s.cfg.GlobalMDS)
	if err != nil {
		tc.Close()
		s.log.Error("drainer_not_started", "job_id", t.st.Job, "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	scanCtx, cancelScan := context.WithCancel(ctx)
	d := &drainer{
		s: s, t: t, id: id, tc: tc, gc: gc, lim: newLimiter(s.cfg.DrainRate),
		jobs: make(chan drainJob, maxQueued), seen: map[string]observed{}, inflight: map[string]bool{},
		cancel: cancel, cancelScan: cancelScan, scanned: make(chan struct{}),
	}
	for range s.cfg.DrainWorkers {
		d.workers.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer d.workers.Done()
			d.work(ctx)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(d.scanned)
		d.scanLoop(scanCtx)
	}()
	d.startBacklogReports(ctx)
	return d
}

// scanLoop scans the tier every ScanInterval until ctx ends.
func (d *drainer) scanLoop(ctx context.Context) {
	tick := time.NewTicker(d.s.cfg.ScanInterval)
	defer tick.Stop()
	for {
		if err := d.scan(ctx, false); err != nil && ctx.Err() == nil {
			d.s.log.Debug("drain_scan_failed", "job_id", d.t.st.Job, "err", err)
		}
		d.saveIfDirty()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scan walks the tier and queues the files to drain: settled ones, or
// with final every one whose current version is not drained.
func (d *drainer) scan(ctx context.Context, final bool) error {
	now := time.Now()
	return d.walk(ctx, func(j drainJob) { d.consider(j, now, final) })
}

// walk calls fn for every file of the tier that a drain rule matches.
func (d *drainer) walk(ctx context.Context, fn func(drainJob)) error {
	var walk func(ino uint64, rel string) error
	walk = func(ino uint64, rel string) error {
		ents, err := d.tc.ReadDirIno(ctx, ino)
		if err != nil {
			return err
		}
		for i := range ents {
			e := &ents[i]
			p := e.Name
			if rel != "" {
				p = rel + "/" + e.Name
			}
			switch {
			case e.Attr.IsDir():
				if d.mayMatchBelow(p) {
					if err := walk(e.Attr.Ino, p); err != nil && !errors.Is(err, syscall.ENOENT) {
						return err
					}
				}
			case e.Attr.IsFile():
				if dest, ok := d.t.spec.DrainTarget(p); ok {
					fn(drainJob{rel: p, ino: e.Attr.Ino, size: e.Attr.Size, mtime: e.Attr.Mtime, dest: dest})
				}
			}
		}
		return nil
	}
	return walk(rpc.RootIno, "")
}

// mayMatchBelow reports whether some rule may match a file below the tier
// directory dir.
func (d *drainer) mayMatchBelow(dir string) bool {
	de := strings.Split(dir, "/")
	for _, r := range d.t.spec.Drain {
		ge := strings.Split(r.Glob, "/")
		ok := true
		for i, e := range de {
			if i >= len(ge)-1 { // the glob's last element names files
				ok = false
				break
			}
			if ge[i] == "**" {
				break
			}
			if m, _ := path.Match(ge[i], e); !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// consider queues j if its version needs a drain now.
func (d *drainer) consider(j drainJob, now time.Time, final bool) {
	d.t.smu.Lock()
	rec := d.t.st.Drains[j.rel]
	d.t.smu.Unlock()
	if rec != nil && rec.Size == j.size && rec.Mtime == j.mtime && (rec.State != drainFailed || !final) {
		return // this version is drained, lost or given up (the final drain tries it once more)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight[j.rel] {
		return
	}
	if !final {
		o, ok := d.seen[j.rel]
		if !ok || o.size != j.size || o.mtime != j.mtime {
			d.seen[j.rel] = observed{size: j.size, mtime: j.mtime, since: now}
			return
		}
		if j.size == 0 || now.Sub(o.since) < d.s.cfg.DrainSettle {
			return
		}
	}
	select {
	case d.jobs <- j:
		delete(d.seen, j.rel)
		d.inflight[j.rel] = true
		d.queuedBytes += j.size
		d.pending.Add(1)
	default: // the queue is full: the next scan offers it again
	}
}

// work drains queued files until ctx ends.
func (d *drainer) work(ctx context.Context) {
	// Files drained to (and read back from) the global namespace are
	// the job's drain traffic for the data servers' QoS schedulers.
	ctx = client.WithTag(ctx, d.t.qosTag(qos.ClassDrain))
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-d.jobs:
			d.drainFile(ctx, j)
			d.mu.Lock()
			delete(d.inflight, j.rel)
			d.queuedBytes -= j.size
			d.mu.Unlock()
			d.pending.Done()
		}
	}
}

// errChanged is a file that changed while it was drained: the next scan
// drains its new version.
var errChanged = errors.New("changed while draining")

// drainFile drains one file, retrying, and records the outcome.
func (d *drainer) drainFile(ctx context.Context, j drainJob) {
	// Backoff: 1 s, then 2 s...: long enough for the tier's MDS to notice
	// a data server that died (heartbeat timeout 2 s), so that a file on
	// it is found lost rather than failed.
	backoff := time.Second
	var err error
	for attempt := 1; attempt <= d.s.cfg.Retries; attempt++ {
		start := time.Now()
		var crc uint32
		crc, err = d.copyOut(ctx, j)
		if err == nil {
			d.record(j, &drainRec{Size: j.size, Mtime: j.mtime, CRC: crc, Dest: j.dest.String(), State: drainDone}, time.Since(start))
			return
		}
		if errors.Is(err, errChanged) || ctx.Err() != nil {
			return
		}
		if d.lost(ctx, j, err) {
			msg := fmt.Sprintf("drain %s: its data is lost (a data server of the tier is down): %v", j.rel, err)
			d.record(j, &drainRec{Size: j.size, Mtime: j.mtime, Dest: j.dest.String(), State: drainLost, Err: msg}, 0)
			return
		}
		var re *readError
		if !errors.As(err, &re) && isJobError(err) {
			break // the destination refuses: no retry helps
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff *= 2
	}
	msg := fmt.Sprintf("drain %s to %s: %v", j.rel, j.dest, err)
	d.record(j, &drainRec{Size: j.size, Mtime: j.mtime, Dest: j.dest.String(), State: drainFailed, Err: oneLine(msg)}, 0)
}

// lost reports whether a failed drain's file cannot be read because one of
// its data servers is down.
func (d *drainer) lost(ctx context.Context, j drainJob, err error) bool {
	var re *readError
	if !errors.As(err, &re) {
		return false
	}
	return d.t.fileOnDownDS(ctx, d.tc, "/"+j.rel)
}

// fileOnDownDS reports whether a tier file has a column on a data server
// the tier's MDS says is down.
func (t *tier) fileOnDownDS(ctx context.Context, tc *client.Client, name string) bool {
	info, err := tc.GetLayout(ctx, name)
	if err != nil {
		return false
	}
	c, err := tc.Cluster(ctx)
	if err != nil {
		return false
	}
	down := map[string]bool{}
	for _, ds := range c.DataSvrs {
		down[ds.ID] = ds.State != "up"
	}
	for _, id := range info.Layout.Targets {
		if down[id] {
			return true
		}
	}
	return false
}

// record keeps a drain's outcome: in the state, on the tier file (xattr)
// and in the registry.
func (d *drainer) record(j drainJob, rec *drainRec, took time.Duration) {
	d.t.smu.Lock()
	d.t.st.Drains[j.rel] = rec
	if rec.State == drainDone {
		d.t.st.Stats.DrainedBytes += j.size
		d.t.st.Stats.DrainedFiles++
		d.t.st.Stats.DrainNanos += int64(took)
	}
	st := d.t.st.Stats
	d.t.smu.Unlock()
	d.mu.Lock()
	d.dirty = true
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	switch rec.State {
	case drainDone:
		v := fmt.Sprintf("%d %d %08x %s", rec.Mtime, rec.Size, rec.CRC, rec.Dest)
		_ = d.tc.SetXattrIno(ctx, j.ino, drainedXattr, []byte(v), 0)
		_ = d.tc.RemoveXattrIno(ctx, j.ino, drainErrXattr)
		d.t.rep.statsLater(st)
	case drainLost:
		_ = d.tc.SetXattrIno(ctx, j.ino, drainErrXattr, []byte(fmt.Sprintf("%d %d %s", rec.Mtime, rec.Size, rec.Err)), 0)
		d.t.rep.put(rpc.TierPutReq{Lost: []string{j.rel}, Errors: []string{rec.Err}})
	default:
		_ = d.tc.SetXattrIno(ctx, j.ino, drainErrXattr, []byte(fmt.Sprintf("%d %d %s", rec.Mtime, rec.Size, rec.Err)), 0)
		d.t.rep.put(rpc.TierPutReq{Errors: []string{rec.Err}})
	}
	d.s.log.Info("drain", "job_id", d.t.st.Job, "file", j.rel, "dest", rec.Dest, "state", rec.State, "bytes", j.size, "err", rec.Err)
}

// saveIfDirty saves the tier's state if drain records changed.
func (d *drainer) saveIfDirty() {
	d.mu.Lock()
	dirty := d.dirty
	d.dirty = false
	d.mu.Unlock()
	if dirty {
		_ = d.t.save()
	}
}

// copyOut copies one tier file to its destination and returns its CRC32C.
func (d *drainer) copyOut(ctx context.Context, j drainJob) (uint32, error) {
	f, a, err := d.tc.OpenIno(ctx, j.ino, os.O_RDONLY)
	if err != nil {
		return 0, &readError{err}
	}
	defer f.Close()
	if a.Size != j.size || a.Mtime != j.mtime {
		return 0, errChanged
	}
	mode := a.Mode & 0o777
	var crc uint32
	if j.dest.Strata {
		crc, err = d.toGlobal(ctx, f, j, mode)
	} else {
		crc, err = d.toLocal(ctx, f, j, mode)
	}
	if err != nil {
		return 0, err
	}
	if a, err := d.tc.Getattr(ctx, j.ino); err != nil || a.Size != j.size || a.Mtime != j.mtime {
		return 0, errChanged
	}
	return crc, nil
}

// tmpName is the temporary name a drain writes dest under.
func (d *drainer) tmpName(dest string) string {
	return path.Join(path.Dir(dest), "."+path.Base(dest)+".strata-drain-"+strconv.FormatUint(uint64(d.t.st.Job), 10))
}

// destErr is the user-facing error of a destination that refuses a drain.
func destErr(dest jobtier.Location, err error) error {
	switch {
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.EROFS):
		return jobErrorf("drain destination %s: %s", dest, errnoText(err))
	}
	return fmt.Errorf("drain destination %s: %w", dest, err)
}

// toGlobal drains f into the global namespace as the job's user.
func (d *drainer) toGlobal(ctx context.Context, f *client.File, j drainJob, mode uint32) (uint32, error) {
	dir := path.Dir(j.dest.Path)
	if err := d.gc.MkdirAll(ctx, dir, 0o755); err != nil {
		return 0, destErr(j.dest, err)
	}
	if a, err := d.gc.Stat(ctx, j.dest.Path); err == nil && a.IsDir() {
		return 0, destErr(j.dest, syscall.EISDIR)
	}
	tmp := d.tmpName(j.dest.Path)
	out, err := d.gc.OpenFile(ctx, tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return 0, destErr(j.dest, err)
	}
	crc, err := copyRange(ctx, out, f, 0, int64(j.size), true, d.lim)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.verifyGlobal(ctx, tmp, int64(j.size), crc)
	}
	if err == nil {
		// The MDS decides as for the user's own rename: in a sticky
		// directory another user's file is not replaced.
		if err = d.gc.Rename(ctx, tmp, j.dest.Path); err != nil {
			err = destErr(j.dest, err)
		}
	}
	if err != nil {
		_ = d.gc.Remove(context.WithoutCancel(ctx), tmp)
		return 0, err
	}
	return crc, nil
}

func (d *drainer) verifyGlobal(ctx context.Context, name string, size int64, crc uint32) error {
	in, err := d.gc.Open(ctx, name)
	if err != nil {
		return err
	}
	defer in.Close()
	return verifyCopy(ctx, in, size, crc, name)
}

// verifyCopy reads a copy back and compares its size and checksum.
func verifyCopy(ctx context.Context, in interface {
	ReadAt([]byte, int64) (int, error)
}, size int64, crc uint32, name string) error {
	got, err := checksumRange(ctx, in, 0, size)
	if err != nil {
		return fmt.Errorf("read back %s: %w", name, err)
	}
	if got != crc {
		return fmt.Errorf("read back %s: checksum %08x, wrote %08x", name, got, crc)
	}
	return nil
}

// toLocal drains f to the node's file system as the job's user (the
// kernel checks the permissions).
func (d *drainer) toLocal(ctx context.Context, f *client.File, j drainJob, mode uint32) (uint32, error) {
	tmp := d.tmpName(j.dest.Path)
	var out *os.File
	err := asUser(d.id, func() error {
		if err := os.MkdirAll(filepath.Dir(j.dest.Path), 0o755); err != nil {
			return err
		}
		var err error
		out, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(mode))
		return err
	})
	if err != nil {
		return 0, destErr(j.dest, err)
	}
	crc, err := copyRange(ctx, out, f, 0, int64(j.size), false, d.lim)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = asUser(d.id, func() error {
			in, err := os.Open(tmp)
			if err != nil {
				return err
			}
			defer in.Close()
			if err := verifyCopy(ctx, in, int64(j.size), crc, tmp); err != nil {
				return err
			}
			return os.Rename(tmp, j.dest.Path)
		})
	}
	if err != nil {
		_ = asUser(d.id, func() error { return os.Remove(tmp) })
		return 0, destErr(j.dest, err)
	}
	return crc, nil
}

// undrained is a file matching a drain rule whose current version is
// neither drained nor given up (failed or lost, both recorded).
type undrained struct {
	rel  string
	size uint64
}

// finish runs the final drain: it stops the scanner, drains every
// matching file whose current version is not drained yet, and waits for
// all drains until ctx ends. It returns the files whose current version
// is still not drained nor recorded as failed or lost (nil if the tier
// cannot be listed: then it reports that). It closes the drainer's
// clients; nothing is recorded as lost here: the caller decides whether
// the rest is drained after the job or lost.
func (d *drainer) finish(ctx context.Context) ([]undrained, error) {
	// The scanner stops; the workers go on with what is queued.
	d.cancelScan()
	<-d.scanned
	err := d.scan(ctx, true)
	if err == nil {
		idle := make(chan struct{})
		go func() {
			d.pending.Wait()
			close(idle)
		}()
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	// A drain cut short records nothing: the listing below finds it.
	d.cancel()
	d.workers.Wait()
	for len(d.jobs) > 0 {
		<-d.jobs
	}
	d.saveIfDirty()
	defer d.gc.Close()
	defer d.tc.Close()
	lctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	left, lerr := d.undrained(lctx)
	if lerr != nil {
		return nil, fmt.Errorf("final drain: list the tier: %w", lerr)
	}
	d.reportFinal(left)
	return left, nil
}

// listTimeout bounds the listing of a tier's undrained files once its
// drain time is over.
const listTimeout = 10 * time.Second

// undrained lists the files matching a rule whose current version has no
// final record (drained, failed or lost).
func (d *drainer) undrained(ctx context.Context) ([]undrained, error) {
	var left []undrained
	err := d.walk(ctx, func(j drainJob) {
		d.t.smu.Lock()
		rec := d.t.st.Drains[j.rel]
		d.t.smu.Unlock()
		if rec == nil || rec.Size != j.size || rec.Mtime != j.mtime {
			left = append(left, undrained{rel: j.rel, size: j.size})
		}
	})
	slices.SortFunc(left, func(a, b undrained) int { return strings.Compare(a.rel, b.rel) })
	return left, err
}
