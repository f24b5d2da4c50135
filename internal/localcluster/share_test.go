package localcluster

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
)

// TestSharedDiskStatFS: four data servers on one disk (strata dev) report
// together the disk's available space, not four times it, and a capacity
// that is that plus what Strata stores (df's "used" is Strata's use).
func TestSharedDiskStatFS(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: dir, MDS: 1, DS: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := client.DefaultConfig()
	cfg.MDS = c.MDSAddr()
	cfg.Auth = c.Credentials()
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	data := make([]byte, 8<<20)
	f, err := cl.Create(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var avail uint64
	deadline := time.Now().Add(time.Minute) // heartbeats bring the data servers' figures
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		avail = st.Bavail * uint64(st.Bsize)
		fs, err := cl.StatFS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		used := fs.Capacity - fs.Free
		// Other processes write to the disk meanwhile: a few percent of
		// slack, never a second disk's worth.
		ok := fs.DSUp == 4 && fs.Free <= avail+avail/20 && fs.Free >= avail-avail/20 &&
			used >= uint64(len(data)) && used < 64<<20
		if ok {
			t.Logf("disk available %d, cluster free %d, used %d", avail, fs.Free, used)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("statfs: %d of 4 data servers, free %d, used %d; the disk has %d available and Strata stores %d", fs.DSUp, fs.Free, used, avail, len(data))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
