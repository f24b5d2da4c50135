package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadAheadSeesWrites: a sequential reader (O_DIRECT, so every read
// reaches the daemon and its read-ahead) sees what another descriptor of
// the same mount wrote a moment before, in blocks that were read ahead
// before the write, and after a truncate.
func TestReadAheadSeesWrites(t *testing.T) {
	_, s := startMount(t, 4)
	p := filepath.Join(s.Dir(), "ra")
	const size = 12 << 20
	if err := os.WriteFile(p, bytes.Repeat([]byte{'A'}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	buf := make([]byte, 1<<20)
	readAt := func(off int64) []byte {
		t.Helper()
		n, err := r.ReadAt(buf, off)
		if err != nil && n == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		return buf[:n]
	}
	// Read forward: blocks ahead are being read.
	for off := int64(0); off < 3<<20; off += 1 << 20 {
		if got := readAt(off); !bytes.Equal(got, bytes.Repeat([]byte{'A'}, 1<<20)) {
			t.Fatalf("block at %d is not A", off)
		}
	}
	// Overwrite a block ahead of the reader, without closing.
	patch := bytes.Repeat([]byte{'B'}, 1000)
	if _, err := w.WriteAt(patch, 4<<20+12345); err != nil {
		t.Fatal(err)
	}
	readAt(3 << 20)
	got := readAt(4 << 20)
	if want := 4<<20 + 12345 - (4 << 20); !bytes.Equal(got[want:want+1000], patch) || got[want-1] != 'A' {
		t.Fatalf("the reader does not see the write made through the other descriptor")
	}
	// Truncate through the writer; the reader sees the end move.
	if err := w.Truncate(5<<20 + 10); err != nil {
		t.Fatal(err)
	}
	if got := readAt(5 << 20); len(got) != 10 {
		t.Fatalf("after truncate the reader reads %d bytes at 5 MiB, want 10", len(got))
	}
}

// TestReadAheadLongSequential: a long sequential reader, in requests that
// are not aligned to the read-ahead blocks (each straddles two of them,
// and batches), through the page cache and with O_DIRECT, reads every
// byte where it was written, past the window's growth to its largest;
// once the file is closed the mount holds no read-ahead memory.
func TestReadAheadLongSequential(t *testing.T) {
	_, s := startMount(t, 4)
	p := filepath.Join(s.Dir(), "long")
	const size = 3*raMax + 12345
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>20) // every MiB differs
	}
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range []int{os.O_RDONLY, os.O_RDONLY | syscall.O_DIRECT} {
		f, err := os.OpenFile(p, flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		got := make([]byte, 0, size)
		// A first short read leaves every later request 4 KiB off the
		// blocks' alignment.
		for off, n := int64(0), 4096; ; n = len(buf) {
			k, err := f.ReadAt(buf[:n], off)
			got = append(got, buf[:k]...)
			off += int64(k)
			if err != nil || k == 0 {
				break
			}
		}
		f.Close()
		if len(got) != size {
			t.Fatalf("flags %#x: read %d bytes, want %d", flags, len(got), size)
		}
		if !bytes.Equal(got, want) {
			i := firstDiff(got, want)
			t.Fatalf("flags %#x: byte %d reads %#x, want %#x", flags, i, got[i], want[i])
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.fsys.rab.held() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the mount holds %d bytes of read-ahead after every file is closed", s.fsys.rab.held())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadAheadTwoStreams: two descriptors of one file read forward in
// turns at different places (O_DIRECT, so that every read reaches the
// mount in order): each is read ahead (blocks ahead of both are held
// after a few reads each), and both read every byte where it was written.
func TestReadAheadTwoStreams(t *testing.T) {
	_, s := startMount(t, 4)
	p := filepath.Join(s.Dir(), "two")
	const size = 24<<20 + 777
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*5 + i>>20)
	}
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	var fs [2]*os.File
	for k := range fs {
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		fs[k] = f
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fs[0].Fd()), &st); err != nil {
		t.Fatal(err)
	}
	starts := [2]int64{0, 12 << 20}
	buf := make([]byte, 1<<20)
	readBoth := func(from, to int64) {
		t.Helper()
		for off := from; off < to; off += 1 << 20 {
			for k, f := range fs {
				at := starts[k] + off
				n, err := f.ReadAt(buf, at)
				if err != nil && n == 0 {
					t.Fatalf("stream %d: read at %d: %v", k, at, err)
				}
				if end := min(at+int64(n), size); !bytes.Equal(buf[:n], want[at:end]) {
					t.Fatalf("stream %d: read at %d: %d bytes, first difference at %d", k, at, n, firstDiff(buf[:n], want[at:end]))
				}
			}
		}
	}
	readBoth(0, 4<<20)
	of := s.fsys.opened(st.Ino)
	if of == nil {
		t.Fatal("the file is not open on the mount")
	}
	of.ra.mu.Lock()
	var missing []int64
	for _, next := range []int64{4, 16} { // the block after each stream's last read
		if of.ra.blocks[next] == nil {
			missing = append(missing, next)
		}
	}
	of.ra.mu.Unlock()
	if len(missing) > 0 {
		t.Fatalf("after 4 reads of each of two streams in turns, nothing is read ahead at blocks %v", missing)
	}
	readBoth(4<<20, 13<<20)
}
