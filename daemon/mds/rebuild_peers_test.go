package mds_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestRebuildKilledMidway: a slow rebuild of a mirror:2 component is under
// way when, in one run, its target data server is stopped and, in the
// other, the only source is. Until the rebuild is done the target holds
// the bytes it got only in a staged copy, never under the component's
// name, so nothing half-written can be read as data; once the stopped
// server is back the rebuild completes, the file reads right from the
// rebuilt copy alone, and the MDS moved none of the bytes itself.
func TestRebuildKilledMidway(t *testing.T) {
	for _, kill := range []string{"target", "source"} {
		t.Run(kill, func(t *testing.T) { testRebuildKilled(t, kill) })
	}
}

func testRebuildKilled(t *testing.T, kill string) {
	const size = 8 << 20 // 4 windows: seconds at 1 MiB/s
	cl := testcluster.Start(t, 6, testcluster.WithMDSConfig(func(c *mds.Config) {
		fastRepair(c)
		c.RebuildRate = 1 << 20
	}))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	data := random(21, size)
	l, ino := put(t, ctx, c, "/f", "width=1,unit=256K,scheme=mirror:2", data)
	source, victim := l.Targets[0], l.Targets[1]
	if err := cl.StopDS(dsIndex(t, cl, victim)); err != nil {
		t.Fatal(err)
	}
	// Mid-rebuild: at least a window copied, not all of them.
	var to string
	poll(t, ctx, "the rebuild is under way", func() string {
		st, err := c.RebuildStatus(ctx)
		if err != nil {
			return err.Error()
		}
		for _, tk := range st.Tasks {
			if tk.Ino == ino && tk.Comp == 1 && tk.To != "" && tk.Bytes > 0 && tk.Bytes < size {
				to = tk.To
				return ""
			}
		}
		return fmt.Sprintf("%+v", st)
	})
	ti := dsIndex(t, cl, to)
	path := cl.DS(ti).ComponentPath(rpc.ComponentID{Ino: ino, Gen: l.Generation, Col: 1})
	stopped := ti
	if kill == "source" {
		stopped = dsIndex(t, cl, source)
	}
	if err := cl.StopDS(stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists with the rebuild unfinished (%v): a half-written component", path, err)
	}
	if _, err := os.Stat(path + ".rebuild"); kill == "target" && err != nil {
		t.Fatalf("no staged copy on the stopped target: the test did not stop it mid-rebuild: %v", err)
	}
	if kill == "source" {
		// Nothing is left to rebuild from: the target must still have
		// no component by that name, however long it is given.
		time.Sleep(2 * time.Second)
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s exists with its only source stopped (%v): a half-written component", path, err)
		}
	}
	if err := cl.StartDS(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the rebuild completes", func() string { return healthy(ctx, c, []string{"/f"}, victim) })
	info, err := c.GetLayout(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	// Read from the rebuilt copy alone.
	if err := cl.StopDS(dsIndex(t, cl, info.Layout.Targets[0])); err != nil {
		t.Fatal(err)
	}
	mustGet(t, ctx, freshClient(t, cl), "/f", data)
	if n := cl.MDS().DataBytes(); n != 0 {
		t.Errorf("the MDS moved %d bytes of file data; rebuilds go data server to data server", n)
	}
	if kill == "target" && info.Layout.Targets[1] != to {
		// Rebuilt elsewhere: the abandoned staged copy is collected.
		poll(t, ctx, "the abandoned staged copy is removed", func() string {
			if _, err := os.Stat(path + ".rebuild"); err == nil {
				return path + ".rebuild still exists"
			}
			return ""
		})
	}
}

// TestRebuildLeaderMovesNoData: an rs:4+2 and a mirror:2 file lose a data
// server; their components are rebuilt (decoded and copied) by the data
// servers, and the MDS's process sends or receives no byte of file data.
func TestRebuildLeaderMovesNoData(t *testing.T) {
	cl := testcluster.Start(t, 7, testcluster.WithMDSConfig(fastRepair))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	rsData, mirData := random(31, 3<<20+777), random(32, 2<<20+5)
	rs, _ := put(t, ctx, c, "/rs", "unit=64K,scheme=rs:4+2", rsData)
	victim := rs.Targets[3]
	mirName := ""
	for i := 0; mirName == ""; i++ {
		name := fmt.Sprintf("/m%d", i)
		if m, _ := put(t, ctx, c, name, "width=2,unit=64K,scheme=mirror:2", mirData); slices.Contains(m.Targets, victim) {
			mirName = name
		}
	}
	if err := cl.StopDS(dsIndex(t, cl, victim)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "rebuild", func() string { return healthy(ctx, c, []string{"/rs", mirName}, victim) })
	st, err := c.RebuildStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.BytesDone == 0 {
		t.Fatalf("rebuild status %+v: no bytes rebuilt", st)
	}
	if n := cl.MDS().DataBytes(); n != 0 {
		t.Errorf("the MDS moved %d bytes of file data for %d rebuilt", n, st.BytesDone)
	}
	r := freshClient(t, cl)
	mustGet(t, ctx, r, "/rs", rsData)
	mustGet(t, ctx, r, mirName, mirData)
}
