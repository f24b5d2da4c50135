package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/jobtier"
)

// TestPlanStageIn checks that every byte of every file is in exactly one
// node's share, that big files are cut into pieces, that the shares are
// balanced by bytes, and that the plan does not depend on the order of
// the listing.
func TestPlanStageIn(t *testing.T) {
	var files []srcFile
	files = append(files, srcFile{dst: "in", dir: true, mode: 0o755}, srcFile{dst: "in/sub", dir: true, mode: 0o755})
	files = append(files, srcFile{dst: "in/big", size: 10<<20 + 5})
	for i := range 40 {
		files = append(files, srcFile{dst: "in/sub/f" + string(rune('a'+i%26)) + string(rune('a'+i/26)), size: int64(i * 1000)})
	}
	files = append(files, srcFile{dst: "in/empty"})
	const chunk = 1 << 20
	dirs, shares := planStageIn(files, 3, chunk)
	var dnames []string
	for _, d := range dirs {
		dnames = append(dnames, d.dst)
	}
	if !slices.Equal(dnames, []string{"in", "in/sub"}) {
		t.Errorf("dirs %v, want in, in/sub (parents first, once each)", dnames)
	}
	pieces := map[string][][2]int64{}
	var load [3]int64
	for n, share := range shares {
		for _, p := range share {
			if p.n > chunk {
				t.Errorf("piece of %d bytes, more than the chunk", p.n)
			}
			pieces[p.file.dst] = append(pieces[p.file.dst], [2]int64{p.off, p.n})
			load[n] += p.n
		}
	}
	covered := map[string]int64{}
	for name, ps := range pieces {
		slices.SortFunc(ps, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		for _, p := range ps {
			if p[0] != covered[name] {
				t.Errorf("%s: piece at %d, want one at %d (a gap or an overlap)", name, p[0], covered[name])
			}
			covered[name] = p[0] + p[1]
		}
	}
	for _, f := range files {
		if !f.dir && covered[f.dst] != f.size {
			t.Errorf("%s: %d of %d bytes planned", f.dst, covered[f.dst], f.size)
		}
		if _, ok := covered[f.dst]; !f.dir && !ok {
			t.Errorf("%s is in no share", f.dst)
		}
	}
	lo, hi := slices.Min(load[:]), slices.Max(load[:])
	if hi-lo > chunk {
		t.Errorf("node loads %v differ by more than a chunk", load)
	}
	rev := slices.Clone(files)
	slices.Reverse(rev)
	_, shares2 := planStageIn(rev, 3, chunk)
	key := func(sh [][]stagePiece) [][]string {
		var out [][]string
		for _, s := range sh {
			var k []string
			for _, p := range s {
				k = append(k, p.file.dst+"@"+string(rune(p.off>>20)))
			}
			out = append(out, k)
		}
		return out
	}
	if !reflect.DeepEqual(key(shares), key(shares2)) {
		t.Error("the plan depends on the order of the listing: nodes would disagree")
	}
}

// TestAsUser checks that file system calls in asUser are the user's: the
// kernel refuses what the user may not do, and what it creates is the
// user's.
func TestAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("asUser changes the file system identity: needs root")
	}
	dir, err := os.MkdirTemp("", "asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	id := identity{uid: 65534, gid: 65534, groups: []uint32{65534}}
	err = asUser(id, func() error { return os.WriteFile(filepath.Join(dir, "x"), nil, 0o644) })
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("create in root's 0755 directory as uid 65534: %v, want EACCES", err)
	}
	if err := asUser(id, func() error { return os.WriteFile(filepath.Join(open, "y"), nil, 0o644) }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(open, "y"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("file made as uid 65534: %v, %+v", err, fi)
	}
	// The goroutine that called asUser is still root.
	if err := os.WriteFile(filepath.Join(dir, "z"), nil, 0o644); err != nil {
		t.Errorf("after asUser, root cannot write: %v", err)
	}
}

// memFile is an io.ReaderAt/WriterAt in memory.
type memFile struct{ b []byte }

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, errors.New("EOF")
	}
	return copy(p, m.b[off:]), nil
}

func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}

func TestCopyRange(t *testing.T) {
	src := make([]byte, 3*copyBuf+100)
	rand.Read(src[copyBuf : 2*copyBuf]) // zeros, data, zeros
	dst := &memFile{}
	crc, err := copyRange(context.Background(), dst, &memFile{src}, 0, int64(len(src)), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if crc != crc32.Checksum(src, castagnoli) {
		t.Error("checksum differs from CRC32C of the data")
	}
	if !bytes.Equal(dst.b, src) {
		t.Errorf("copy of %d bytes differs (%d bytes written): the zero tail must still be written", len(src), len(dst.b))
	}
	// A piece in the middle.
	dst2 := &memFile{}
	crc, err = copyRange(context.Background(), dst2, &memFile{src}, copyBuf-10, 20, false, nil)
	if err != nil || crc != crc32.Checksum(src[copyBuf-10:copyBuf+10], castagnoli) || !bytes.Equal(dst2.b[copyBuf-10:], src[copyBuf-10:copyBuf+10]) {
		t.Errorf("piece: %v", err)
	}
	// A short source is an error of the read side.
	_, err = copyRange(context.Background(), &memFile{}, &memFile{src[:100]}, 0, 200, false, nil)
	var re *readError
	if !errors.As(err, &re) {
		t.Errorf("short source: %v, want a readError", err)
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(4 << 20)
	start := time.Now()
	for range 6 {
		if err := l.wait(context.Background(), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	// 6 MiB at 4 MiB/s, the first 0.4 MiB from the initial bucket.
	if d := time.Since(start); d < time.Second {
		t.Errorf("6 MiB at 4 MiB/s took %v", d)
	}
	if newLimiter(0) != nil || newLimiter(0).wait(context.Background(), 1<<30) != nil {
		t.Error("rate 0 must not limit")
	}
}

func TestMayMatchBelow(t *testing.T) {
	spec, err := jobtier.Parse("drain=ckpt/*:strata:/a,drain=out/**/*.h5:strata:/b,drain=run?/log/*:/c")
	if err != nil {
		t.Fatal(err)
	}
	d := &drainer{t: &tier{spec: spec}}
	for dir, want := range map[string]bool{
		"ckpt": true, "ckpt/sub": false, "out": true, "out/a/b/c": true,
		"run1": true, "run1/log": true, "run1/log/x": false, "runs": true, "run12": false, "other": false,
	} {
		if got := d.mayMatchBelow(dir); got != want {
			t.Errorf("mayMatchBelow(%q) = %v, want %v", dir, got, want)
		}
	}
}

func TestJobSecret(t *testing.T) {
	g := bytes.Repeat([]byte{1}, 32)
	a, b := jobSecret(g, 7), jobSecret(g, 8)
	if len(a) != 32 || bytes.Equal(a, b) || !bytes.Equal(a, jobSecret(g, 7)) || bytes.Equal(a, jobSecret(bytes.Repeat([]byte{2}, 32), 7)) {
		t.Error("a job's secret must be 32 bytes, the same on every node, and differ per job and per cluster")
	}
}
