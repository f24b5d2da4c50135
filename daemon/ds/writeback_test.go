package ds

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestWritebackStops: the bytes written read back whole while their
// writeback runs, the store's close ends its writeback goroutine (ranges
// still queued are dropped), and a range offered after the close is
// dropped rather than sent on a closed queue.
func TestWritebackStops(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore(dir, OSDisk{}, slog.New(slog.DiscardHandler), "ds1", bs, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	id := rpc.ComponentID{Ino: 1, Gen: 1}
	data := bytes.Repeat([]byte("writeback"), 4*bs/9+1)
	for i := range 8 {
		off := uint64(i * len(data))
		if _, err := st.write(id, off, data, rpc.AppendSums(nil, off, data)); err != nil {
			t.Fatal(err)
		}
	}
	var sums []byte
	out := &sliceBuffer{}
	if n, _, err := st.read(id, uint64(3*len(data)), uint64(len(data)), out, &sums); err != nil || !bytes.Equal(out.p[:n], data) {
		t.Fatalf("read back %d bytes, err %v: not what was written", n, err)
	}
	st.close()
	select {
	case <-st.wb.done:
	case <-time.After(time.Minute):
		t.Fatal("the writeback goroutine still runs after the store closed")
	}
	f, err := os.Create(filepath.Join(dir, "late"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st.wb.start(f, 0, 1) // would panic on a closed channel
}
