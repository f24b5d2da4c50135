package ds

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

func newTestStore(t testing.TB, capacity uint64) *store {
	t.Helper()
	st, err := openStore(t.TempDir(), OSDisk{}, slog.New(slog.DiscardHandler), "ds1", bs, capacity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	return st
}

type sliceBuffer struct{ p []byte }

func (b *sliceBuffer) Buffer(n int) []byte {
	b.p = make([]byte, n)
	return b.p
}

// FuzzStore drives the store with operations decoded from the input (5
// bytes each: kind, offset, length) and checks it against the model.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 16, 3, 0, 0, 0, 32})
	f.Add([]byte{0, 100, 1, 200, 40, 2, 50, 3, 0, 0, 0, 0, 20, 0, 1, 3, 0, 0, 255, 255})
	f.Add([]byte{2, 0, 200, 0, 0, 0, 7, 1, 9, 9, 3, 0, 0, 255, 255, 4, 0, 0, 0, 0, 3, 0, 0, 255, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		st := newTestStore(t, 1<<30)
		id := rpc.ComponentID{Ino: 1, Gen: 1}
		var m model
		for i := 0; i+5 <= len(ops) && i < 5*64; i += 5 {
			off := int(binary.LittleEndian.Uint16(ops[i+1:])) % (16 * bs)
			n := int(binary.LittleEndian.Uint16(ops[i+3:])) % (3 * bs)
			switch ops[i] % 6 {
			case 0, 1:
				p := make([]byte, n)
				for j := range p {
					p[j] = byte(i + j*31)
				}
				if _, err := st.write(id, uint64(off), p, rpc.AppendSums(nil, uint64(off), p)); err != nil {
					t.Fatalf("op %d: write(%d, %d): %v", i/5, off, n, err)
				}
				m.write(off, p)
			case 2:
				if _, err := st.truncate(id, uint64(off)); err != nil {
					t.Fatalf("op %d: truncate(%d): %v", i/5, off, err)
				}
				m.truncate(off)
			case 3:
				var b sliceBuffer
				var sums []byte
				k, size, err := st.read(id, uint64(off), uint64(n), &b, &sums)
				if err != nil || size != uint64(len(m)) {
					t.Fatalf("op %d: read(%d, %d) = size %d, %v; want size %d", i/5, off, n, size, err, len(m))
				}
				if err := rpc.CheckSums(uint64(off), sums, b.p[:k]); err != nil {
					t.Fatalf("op %d: read(%d, %d): %v", i/5, off, n, err)
				}
				if d := diff(b.p[:k], m.read(off, n)); d != "" {
					t.Fatalf("op %d: read(%d, %d): %s", i/5, off, n, d)
				}
			case 4:
				if err := st.remove(id); err != nil {
					t.Fatalf("op %d: remove: %v", i/5, err)
				}
				m = nil
			case 5:
				if _, err := st.punch(id, uint64(off), uint64(n)); err != nil {
					t.Fatalf("op %d: punch(%d, %d): %v", i/5, off, n, err)
				}
				m.punch(off, n)
			}
		}
		// The file system may move a file's block count while the early
		// writeback (writeback.go) writes it out; what is counted must
		// match what the file holds once that settles.
		used, _ := st.usage()
		held := onDisk(t, st, id)
		for deadline := time.Now().Add(5 * time.Second); used != held && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			used, _ = st.usage()
			held = onDisk(t, st, id)
		}
		if used != held {
			t.Fatalf("used = %d, the component's file holds %d", used, held)
		}
	})
}

// TestRemoveWhileWriting: writes racing with removes never fail or leak
// space, and the survivor is whatever the last write after the last
// remove made.
func TestRemoveWhileWriting(t *testing.T) {
	st := newTestStore(t, 1<<30)
	id := rpc.ComponentID{Ino: 5, Gen: 1}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := range 20 {
				off := uint64((k*4 + w) * 100)
				if _, err := st.write(id, off, make([]byte, 100), rpc.AppendSums(nil, off, make([]byte, 100))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := st.remove(id); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	size, err := st.stat(id)
	if err != nil {
		t.Fatal(err)
	}
	if used, _ := st.usage(); used != onDisk(t, st, id) {
		t.Fatalf("used = %d, the component of %d bytes holds %d", used, size, onDisk(t, st, id))
	}
	if err := st.remove(id); err != nil {
		t.Fatal(err)
	}
	if used, _ := st.usage(); used != 0 {
		t.Fatalf("used after the last remove = %d", used)
	}
}

func TestStoreClosed(t *testing.T) {
	st := newTestStore(t, 1<<30)
	st.close()
	if _, err := st.write(rpc.ComponentID{Ino: 1}, 0, []byte("x"), rpc.AppendSums(nil, 0, []byte("x"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close = %v, want ErrClosed", err)
	}
}

// onDisk returns the bytes component id's data file takes on disk (0 if
// it is missing): what the store must count as used.
func onDisk(t testing.TB, st *store, id rpc.ComponentID) uint64 {
	t.Helper()
	info, err := os.Stat(st.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return allocatedInfo(info)
}
