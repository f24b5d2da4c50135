package fuse

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordLen is the length of one appended record, newline included.
const recordLen = 64

func record(id, seq int) []byte {
	r := fmt.Sprintf("writer=%03d seq=%06d ", id, seq)
	return []byte(r + strings.Repeat("x", recordLen-1-len(r)) + "\n")
}

// appendRecords appends n records, one write(2) each, to path opened
// with O_APPEND.
func appendRecords(path string, id, n int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := f.Write(record(id, i)); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// rangeLen is the byte range each range writer owns: not a multiple of
// any stripe unit, so writers share units and pages at the boundaries.
const rangeLen = 3<<20 + 4097

// rangeByte is the content of byte off of the range test's file.
func rangeByte(off int64) byte { return byte(off*7 + off>>12 + 1) }

// writeRange writes the range of writer id with pwrite calls of random
// sizes in random order of chunks.
func writeRange(path string, id, _ int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	start, end := int64(id)*rangeLen, int64(id+1)*rangeLen
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	type piece struct{ off, n int64 }
	var pieces []piece
	for off := start; off < end; {
		n := min(int64(1+rng.IntN(256<<10)), end-off)
		pieces = append(pieces, piece{off, n})
		off += n
	}
	// Mostly in order, with some pieces swapped.
	for i := range pieces {
		if rng.IntN(4) == 0 {
			j := rng.IntN(len(pieces))
			pieces[i], pieces[j] = pieces[j], pieces[i]
		}
	}
	buf := make([]byte, 256<<10)
	for _, p := range pieces {
		b := buf[:p.n]
		for i := range b {
			b[i] = rangeByte(p.off + int64(i))
		}
		if _, err := f.WriteAt(b, p.off); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// runHelpers runs one helper process per path in paths (the helper's id
// is its index) and waits for all of them.
func runHelpers(t *testing.T, helper string, paths []string, count int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(paths))
	outs := make([][]byte, len(paths))
	for i, p := range paths {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", p, fmt.Sprint(i), fmt.Sprint(count))
		cmd.Env = append(os.Environ(), helperEnv+"="+helper)
		cmd.Dir = os.TempDir() // not in the mount this process serves
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("helper %s %d: %v\n%s", helper, i, err, outs[i])
		}
	}
}

// TestConcurrentAppend: several processes append records with O_APPEND
// to one file of one mount; every record is there exactly once. The
// kernel serializes the appends of one mount (it holds the inode lock
// and takes the offset from its file size), so records never tear.
func TestConcurrentAppend(t *testing.T) {
	_, s := startMount(t, 4)
	const procs, n = 6, 300
	p := filepath.Join(s.Dir(), "log")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, procs)
	for i := range paths {
		paths[i] = p
	}
	runHelpers(t, "append", paths, n)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != procs*n*recordLen {
		t.Fatalf("file has %d bytes, want %d", len(data), procs*n*recordLen)
	}
	seen := map[string]int{}
	for off := 0; off < len(data); off += recordLen {
		seen[string(data[off:off+recordLen])]++
	}
	for id := 0; id < procs; id++ {
		for i := 0; i < n; i++ {
			if c := seen[string(record(id, i))]; c != 1 {
				t.Fatalf("record writer=%d seq=%d is there %d times", id, i, c)
			}
		}
	}
}

// TestDisjointWriters: processes on two mounts of one namespace write
// disjoint ranges of one file, in random-sized pieces partly out of order;
// after they close, the file is byte-exact on both mounts.
func TestDisjointWriters(t *testing.T) {
	cl, a := startMount(t, 4)
	b := mountCluster(t, cl, DefaultOptions())
	const procs = 6
	name := "shared"
	if err := os.WriteFile(filepath.Join(a.Dir(), name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, procs)
	for i := range paths {
		dir := a.Dir()
		if i%2 == 1 {
			dir = b.Dir()
		}
		paths[i] = filepath.Join(dir, name)
	}
	runHelpers(t, "range", paths, 0)
	want := make([]byte, procs*rangeLen)
	for i := range want {
		want[i] = rangeByte(int64(i))
	}
	for _, m := range []*Server{a, b} {
		got, err := os.ReadFile(filepath.Join(m.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want %d; first difference at %d", m.Dir(), len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
