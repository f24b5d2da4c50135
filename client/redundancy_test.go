package client_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// clientWith returns a client of cl whose data requests carry at most
// chunk bytes, so that small files exercise the chunking and windowing of
// large ones.
func clientWith(t *testing.T, cl *testcluster.Cluster, chunk int) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.MDS = cl.MDSAddr()
	cfg.Auth = cl.Credentials()
	cfg.ChunkSize = chunk
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// dsIndex is the test cluster index of data server id.
func dsIndex(t *testing.T, cl *testcluster.Cluster, id string) int {
	t.Helper()
	for i := 0; i < cl.NumDS(); i++ {
		if id == fmt.Sprintf("ds%d", i+1) {
			return i
		}
	}
	t.Fatalf("unknown data server %q", id)
	return -1
}

// verifyAll reads every file of model through a fresh open and compares.
func verifyAll(t *testing.T, ctx context.Context, c *client.Client, model map[string][]byte, what string) {
	t.Helper()
	for name, want := range model {
		mustEqual(t, what+" "+name, readAll(t, ctx, c, name), want)
	}
}

// TestRandomIORedundant is TestRandomIO for mirror:2, mirror:3, rs:4+2 and
// rs:2+1: unaligned writes and overwrites, sparse writes past the end,
// truncates that shrink and grow, reads, closes and reopens, checked
// against an in-memory model. Units and chunk sizes are small so that a
// file spans many rows, windows and chunks. At the end every data server
// is stopped in turn and every file read again: degraded reads use the
// parity and the other copies, so they check that writes and truncates
// kept them consistent.
func TestRandomIORedundant(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 17))
	cl := testcluster.Start(t, 7)
	ctx := testcluster.Context(t, 5*time.Minute)
	clients := []*client.Client{cl.Client(), clientWith(t, cl, 8<<10), clientWith(t, cl, 12<<10)}
	schemes := []string{"mirror:2", "mirror:3", "rs:4+2", "rs:2+1"}
	steps, maxSize := 240, int64(1<<20)
	if testing.Short() {
		steps = 80
	}
	model := map[string][]byte{}
	var names []string
	for i := 0; i < 16; i++ {
		name := fmt.Sprintf("/f%02d", i)
		spec := fmt.Sprintf("unit=%dK,scheme=%s", 4<<rnd.IntN(4), schemes[i%len(schemes)])
		if i%len(schemes) < 2 {
			spec += fmt.Sprintf(",width=%d", 1+rnd.IntN(2))
		}
		f, err := clients[0].OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644, spec)
		if err != nil {
			t.Fatalf("create %s %s: %v", name, spec, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		model[name] = nil
		names = append(names, name)
	}
	for step := 0; step < steps; step++ {
		name := names[rnd.IntN(len(names))]
		c := clients[rnd.IntN(len(clients))]
		want := model[name]
		f, err := c.OpenFile(ctx, name, os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("step %d: open %s: %v", step, name, err)
		}
		what := fmt.Sprintf("step %d: %s %s", step, name, f.Layout())
		for op := 0; op < 1+rnd.IntN(4); op++ {
			switch k := rnd.IntN(10); {
			case k < 5: // write, possibly past the end (sparse)
				off := rnd.Int64N(maxSize)
				n := rnd.Int64N(min(maxSize-off, 256<<10) + 1)
				if rnd.IntN(4) == 0 {
					n = rnd.Int64N(100) // tiny
				}
				p := make([]byte, n)
				fill(rnd, p)
				if _, err := f.WriteAt(p, off); err != nil {
					t.Fatalf("%s: write [%d,+%d): %v", what, off, n, err)
				}
				if n == 0 {
					break // writes nothing, extends nothing
				}
				if end := off + n; end > int64(len(want)) {
					want = append(want, make([]byte, end-int64(len(want)))...)
				}
				copy(want[off:], p)
			case k < 8: // read a random range
				off := rnd.Int64N(int64(len(want)) + 10)
				p := make([]byte, rnd.IntN(300<<10))
				got, err := f.ReadAt(p, off)
				wantN := max(0, min(int64(len(p)), int64(len(want))-off))
				if int64(got) != wantN || (err != nil && err != io.EOF) {
					t.Fatalf("%s: read [%d,+%d) = %d, %v; want %d bytes", what, off, len(p), got, err, wantN)
				}
				if wantN > 0 {
					mustEqual(t, fmt.Sprintf("%s: read at %d", what, off), p[:got], want[off:off+wantN])
				}
			default: // truncate, shrinking or growing
				size := rnd.Int64N(maxSize)
				if err := f.Truncate(size); err != nil {
					t.Fatalf("%s: truncate to %d: %v", what, size, err)
				}
				if size <= int64(len(want)) {
					want = want[:size]
				} else {
					want = append(want, make([]byte, size-int64(len(want)))...)
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Fatalf("%s: close: %v", what, err)
		}
		model[name] = want
		if rnd.IntN(4) == 0 {
			mustEqual(t, what+": reopen", readAll(t, ctx, c, name), want)
		}
	}
	verifyAll(t, ctx, clients[0], model, "healthy")
	for i := 0; i < cl.NumDS(); i++ {
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
		// A fresh client: the transport's pooled connections to a data
		// server that restarted fail once each: rpc.Client does not retry them.
		verifyAll(t, ctx, clientWith(t, cl, 8<<10*(1+i%2)), model, fmt.Sprintf("ds%d down:", i+1))
		if err := cl.StartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentRowWriters: writers to disjoint stripe rows of one rs:4+2
// file, each with unaligned ends (partial rows), in parallel; then every
// byte reads back, healthy and with a data server down.
func TestConcurrentRowWriters(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 19))
	cl := testcluster.Start(t, 6)
	c := clientWith(t, cl, 64<<10)
	ctx := testcluster.Context(t, 2*time.Minute)
	const unit, rows = 16 << 10, 3 // each writer owns 3 rows of 4 units
	row := int64(4 * unit)
	const writers = 8
	want := make([]byte, writers*rows*row)
	fill(rnd, want)
	f, err := c.OpenFileLayout(ctx, "/n1", os.O_RDWR|os.O_CREATE, 0o644, fmt.Sprintf("unit=%d,scheme=rs:4+2", unit))
	if err != nil {
		t.Fatal(err)
	}
	// Writer w owns rows [3w, 3w+3) and writes them in random pieces,
	// first a middle piece, then the rest on both sides.
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		lo, hi := int64(w)*rows*row, int64(w+1)*rows*row
		cut1 := lo + 1 + rnd.Int64N(row)
		cut2 := hi - 1 - rnd.Int64N(row)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range [][2]int64{{cut1, cut2}, {lo, cut1}, {cut2, hi}} {
				if _, err := f.WriteAt(want[r[0]:r[1]], r[0]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "healthy", readAll(t, ctx, c, "/n1"), want)
	info, err := c.GetLayout(ctx, "/n1")
	if err != nil {
		t.Fatal(err)
	}
	for col := 0; col < 4; col++ {
		i := dsIndex(t, cl, info.Layout.Targets[col])
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
		mustEqual(t, fmt.Sprintf("column %d down", col), readAll(t, ctx, clientWith(t, cl, 64<<10), "/n1"), want)
		if err := cl.StartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
}
