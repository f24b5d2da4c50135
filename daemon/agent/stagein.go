package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	cred "github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/jobtier"
	"github.com/strata-hpc/strata/qos"
)

// Stage-in: every node lists the sources (as the job's user), cuts the
// files into pieces of at most StageChunk and spreads the pieces over the
// nodes by size, the biggest first, each to the node with the fewest bytes
// so far. The plan depends only on the listing, so every node computes
// the same one alone and copies its own share into the tier, through a
// client of the tier's MDS. Each piece's CRC32C is taken while copying and
// checked by reading the piece back from the tier; the checksums are kept
// in the job's directory (stage-in.json). Slurm starts the job only once
// every node's prolog, and so every share, is done.

// srcFile is one file or directory of a stage-in source.
type srcFile struct {
	loc  jobtier.Location // the file itself
	dst  string           // tier path, relative and clean
	size int64
	mode uint32 // permission bits
	dir  bool
}

// stagePiece is one piece of one file for one node to copy.
type stagePiece struct {
	file *srcFile
	off  int64
	n    int64
}

// stageSum is one line of stage-in.json.
type stageSum struct {
	Path   string `json:"path"`
	Off    int64  `json:"off"`
	Len    int64  `json:"len"`
	CRC32C uint32 `json:"crc32c"`
}

// stageIn copies this node's share of the stage-in into the tier.
func (s *Server) stageIn(ctx context.Context, t *tier, tc *client.Client, id identity) error {
	// Reads of the global namespace are the job's stage-in traffic for
	// the data servers' QoS schedulers.
	ctx = client.WithTag(ctx, t.qosTag(qos.ClassStage))
	start := time.Now()
	gc, err := t.globalClient(s.cfg.GlobalMDS)
	if err != nil {
		return err
	}
	defer gc.Close()
	files, err := listStageIn(ctx, t.spec.StageIn, gc, id)
	if err != nil {
		return err
	}
	dirs, shares := planStageIn(files, len(t.st.Nodes), s.cfg.StageChunk)
	for _, d := range dirs {
		if err := tc.MkdirAll(ctx, "/"+d.dst, d.mode); err != nil {
			return jobErrorf("stage-in: make %s in the tier: %s", d.dst, errnoText(err))
		}
	}
	mine := shares[t.st.Index]
	sums := make([]stageSum, len(mine))
	work := make(chan int)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(s.cfg.StageWorkers, max(len(mine), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := mine[i]
				crc, err := s.stagePiece(ctx, tc, gc, id, p)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				sums[i] = stageSum{Path: p.file.dst, Off: p.off, Len: p.n, CRC32C: crc}
				mu.Unlock()
				if err == nil {
					t.addStaged(p, start)
				}
			}
		}()
	}
	for i := range mine {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return firstErr
	}
	b, _ := json.MarshalIndent(sums, "", "  ")
	if err := os.WriteFile(filepath.Join(t.jobDir, "stage-in.json"), b, 0o600); err != nil {
		return err
	}
	t.rep.statsLater(t.stats())
	return nil
}

// addStaged counts a staged piece (a file when it is the file's first
// piece) and the time spent so far.
func (t *tier) addStaged(p stagePiece, start time.Time) {
	t.smu.Lock()
	t.st.Stats.StagedBytes += uint64(p.n)
	if p.off == 0 {
		t.st.Stats.StagedFiles++
	}
	t.st.Stats.StageNanos = int64(time.Since(start))
	st := t.st.Stats
	t.smu.Unlock()
	t.rep.statsLater(st)
}

// globalClient returns a client of the global namespace whose every call
// acts for the job's user: the MDS checks its permissions, and what it
// creates is the user's.
func (t *tier) globalClient(mds string) (*client.Client, error) {
	user := cred.ActingFor(t.globalCreds, cred.Actor{Uid: t.st.UID, Gid: t.st.GID})
	return client.New(client.Config{MDS: mds, Timeout: 30 * time.Second, Cred: rpc.Cred{Uid: t.st.UID, Gid: t.st.GID}, Auth: user, TLS: t.globalTLS})
}

// stageErr is the user-facing error of a failed stage-in of a source. It
// names the file or directory below the source that failed, if any (not
// a missing parent of the source: the source is the user's word).
func stageErr(loc jobtier.Location, err error) error {
	if isJobError(err) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Path, strings.TrimSuffix(loc.Path, "/")+"/") {
		return jobErrorf("stage-in source %s: %s: %s", loc, pe.Path, errnoText(err))
	}
	return jobErrorf("stage-in source %s: %s", loc, errnoText(err))
}

// listStageIn lists every stage-in source as id, refusing what id may not
// read.
func listStageIn(ctx context.Context, ins []jobtier.StageIn, gc *client.Client, id identity) ([]srcFile, error) {
	var out []srcFile
	for _, in := range ins {
		var files []srcFile
		var err error
		if in.Src.Strata {
			files, err = listGlobal(ctx, gc, in)
		} else {
			files, err = listLocal(id, in)
		}
		if err != nil {
			return nil, stageErr(in.Src, err)
		}
		out = append(out, files...)
	}
	return out, nil
}

// tierDst is where a file rel below a stage-in's source goes in the tier.
func tierDst(in jobtier.StageIn, rel string) string {
	return path.Clean(path.Join(in.Dst, rel))
}

// listGlobal lists a source in the global namespace as the job's user
// (gc acts for it: the MDS checks search and read permission), opening
// each file once to refuse an unreadable one early.
func listGlobal(ctx context.Context, gc *client.Client, in jobtier.StageIn) ([]srcFile, error) {
	a, err := gc.Stat(ctx, in.Src.Path)
	if err != nil {
		return nil, err
	}
	if !a.IsDir() {
		if !a.IsFile() {
			return nil, errors.New("not a regular file or directory")
		}
		if err := mayRead(ctx, gc, in.Src.Path); err != nil {
			return nil, err
		}
		dst := in.Dst
		if dst == "." {
			dst = path.Base(in.Src.Path)
		}
		return []srcFile{{loc: in.Src, dst: dst, size: int64(a.Size), mode: a.Mode & 0o777}}, nil
	}
	var out []srcFile
	var walk func(dir string, rel string, a *rpc.Attr) error
	walk = func(dir, rel string, a *rpc.Attr) error {
		out = append(out, srcFile{loc: jobtier.Location{Strata: true, Path: dir}, dst: tierDst(in, rel), mode: a.Mode&0o777 | 0o700, dir: true})
		ents, err := gc.ReadDir(ctx, dir)
		if err != nil {
			return err
		}
		for i := range ents {
			e := &ents[i]
			p, r := path.Join(dir, e.Name), path.Join(rel, e.Name)
			switch {
			case e.Attr.IsDir():
				if err := walk(p, r, &e.Attr); err != nil {
					return err
				}
			case e.Attr.IsFile():
				if err := mayRead(ctx, gc, p); err != nil {
					return err
				}
				out = append(out, srcFile{loc: jobtier.Location{Strata: true, Path: p}, dst: tierDst(in, r), size: int64(e.Attr.Size), mode: e.Attr.Mode & 0o777})
			}
		}
		return nil
	}
	return out, walk(in.Src.Path, ".", a)
}

// mayRead opens the global file p for reading and closes it: the MDS
// refuses the open if gc's user may not read p.
func mayRead(ctx context.Context, gc *client.Client, p string) error {
	f, err := gc.Open(ctx, p)
	if err != nil {
		return err
	}
	return f.Close()
}

// listLocal lists a source on this node's file system as id (the kernel
// checks), opening each file once to refuse an unreadable one early.
func listLocal(id identity, in jobtier.StageIn) ([]srcFile, error) {
	var out []srcFile
	err := asUser(id, func() error {
		fi, err := os.Stat(in.Src.Path)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				return errors.New("not a regular file or directory")
			}
			f, err := os.Open(in.Src.Path)
			if err != nil {
				return err
			}
			f.Close()
			dst := in.Dst
			if dst == "." {
				dst = path.Base(in.Src.Path)
			}
			out = append(out, srcFile{loc: in.Src, dst: dst, size: fi.Size(), mode: uint32(fi.Mode().Perm())})
			return nil
		}
		return filepath.WalkDir(in.Src.Path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(in.Src.Path, p)
			info, err := d.Info()
			if err != nil {
				return err
			}
			loc := jobtier.Location{Path: p}
			switch {
			case d.IsDir():
				out = append(out, srcFile{loc: loc, dst: tierDst(in, rel), mode: uint32(info.Mode().Perm()) | 0o700, dir: true})
			case info.Mode().IsRegular():
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				f.Close()
				out = append(out, srcFile{loc: loc, dst: tierDst(in, rel), size: info.Size(), mode: uint32(info.Mode().Perm())})
			}
			return nil
		})
	})
	return out, err
}

// planStageIn returns the directories to make (parents first) and each
// node's pieces. It depends only on files, so every node computes the same
// plan.
func planStageIn(files []srcFile, nodes int, chunk int64) (dirs []*srcFile, shares [][]stagePiece) {
	var pieces []stagePiece
	for i := range files {
		f := &files[i]
		if f.dir {
			dirs = append(dirs, f)
			continue
		}
		if f.dst != "." {
			if d := path.Dir(f.dst); d != "." {
				dirs = append(dirs, &srcFile{dst: d, mode: 0o755, dir: true})
			}
		}
		for off := int64(0); off < f.size || off == 0; off += chunk {
			pieces = append(pieces, stagePiece{file: f, off: off, n: min(chunk, f.size-off)})
			if f.size == 0 {
				break
			}
		}
	}
	slices.SortFunc(dirs, func(a, b *srcFile) int { return cmp.Compare(a.dst, b.dst) })
	dirs = slices.CompactFunc(dirs, func(a, b *srcFile) bool { return a.dst == b.dst })
	dirs = slices.DeleteFunc(dirs, func(d *srcFile) bool { return d.dst == "." })
	slices.SortStableFunc(pieces, func(a, b stagePiece) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.file.dst, b.file.dst), cmp.Compare(a.off, b.off))
	})
	shares = make([][]stagePiece, nodes)
	load := make([]int64, nodes)
	for _, p := range pieces {
		best := 0
		for i := range load {
			if load[i] < load[best] {
				best = i
			}
		}
		shares[best] = append(shares[best], p)
		load[best] += max(p.n, 1)
	}
	return dirs, shares
}

// readerAtCloser is an open stage-in source.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// openSource opens a source file for reading as id.
func openSource(ctx context.Context, gc *client.Client, id identity, loc jobtier.Location) (readerAtCloser, error) {
	if loc.Strata {
		return gc.Open(ctx, loc.Path)
	}
	var f *os.File
	err := asUser(id, func() error {
		var err error
		f, err = os.Open(loc.Path)
		return err
	})
	return f, err
}

// stagePiece copies one piece into the tier, then reads it back and
// compares checksums. It returns the piece's CRC32C.
func (s *Server) stagePiece(ctx context.Context, tc, gc *client.Client, id identity, p stagePiece) (uint32, error) {
	src, err := openSource(ctx, gc, id, p.file.loc)
	if err != nil {
		return 0, stageErr(p.file.loc, err)
	}
	defer src.Close()
	dst, err := tc.OpenFile(ctx, "/"+p.file.dst, os.O_WRONLY|os.O_CREATE, p.file.mode)
	if err != nil {
		return 0, tierWriteErr(p.file.dst, err)
	}
	crc, err := copyRange(ctx, dst, src, p.off, p.n, true, s.stageLim)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var pe *readError
		if errors.As(err, &pe) {
			return 0, stageErr(p.file.loc, err)
		}
		return 0, tierWriteErr(p.file.dst, err)
	}
	back, err := tc.Open(ctx, "/"+p.file.dst)
	if err != nil {
		return 0, tierWriteErr(p.file.dst, err)
	}
	defer back.Close()
	got, err := checksumRange(ctx, back, p.off, p.n)
	if err != nil {
		return 0, jobErrorf("stage-in: read back %s from the tier: %v", p.file.dst, err)
	}
	if got != crc {
		return 0, jobErrorf("stage-in: %s bytes %d-%d: checksum %08x in the tier, %08x at the source", p.file.dst, p.off, p.off+p.n, got, crc)
	}
	return crc, nil
}

// tierWriteErr is the user-facing error of a failed write into the tier.
func tierWriteErr(dst string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return jobErrorf("stage-in: the storage tier is full writing %s (ask for a larger capacity=)", dst)
	}
	return jobErrorf("stage-in: write %s in the tier: %v", dst, err)
}
