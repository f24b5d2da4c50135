package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
