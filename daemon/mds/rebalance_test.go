package mds_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/localcluster"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestRebalanceOntoNewDataServers: two empty data servers join a cluster
// whose four are about 20% full; without an admin doing anything more, the
// MDS moves components onto them until the fills are within the spread,
// and every file still reads back byte-exact through a new client.
func TestRebalanceOntoNewDataServers(t *testing.T) {
	const capacity = 64 << 20
	cl := testcluster.Start(t, 4, testcluster.WithCapacity(capacity), testcluster.WithMDSConfig(func(c *mds.Config) {
		fastRepair(c)
		c.RebalanceSpread = 0.10
	}))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	files := map[string][]byte{}
	specs := []string{"width=2,unit=256K", "width=1,unit=256K", "width=2,unit=256K,scheme=mirror:2", "width=2,unit=256K,scheme=rs:2+1"}
	for i := range 12 {
		name := fmt.Sprintf("/f%02d", i)
		files[name] = random(uint64(100+i), 4<<20+i*4099)
		put(t, ctx, c, name, specs[i%len(specs)], files[name])
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	// A reader that opened every file before the moves keeps reading right
	// through them (the old copy stays until no capability can read it,
	// then the reader's layout is refreshed).
	reader := freshClient(t, cl)
	open := map[string]*client.File{}
	for _, n := range names {
		f, err := reader.Open(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		open[n] = f
	}
	var added []string
	for range 2 {
		i, err := cl.AddDS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, localcluster.DSID(i))
	}
	if err := cl.WaitDS(ctx, 6); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the data spreads onto the new data servers", func() string {
		list, err := c.ListDS(ctx)
		if err != nil {
			return err.Error()
		}
		lo, hi := 2.0, -1.0
		var desc []string
		for _, d := range list.DataSvrs {
			f := float64(d.Bytes) / float64(d.Info.Capacity)
			lo, hi = min(lo, f), max(hi, f)
			desc = append(desc, fmt.Sprintf("%s %d comps %.1f%%", d.Info.ID, d.Components, 100*f))
			if slices.Contains(added, d.Info.ID) && d.Components == 0 {
				return "nothing on " + d.Info.ID + ": " + strings.Join(desc, ", ")
			}
		}
		if hi-lo > 0.10 {
			return fmt.Sprintf("fills differ by %.1f%%: %s", 100*(hi-lo), strings.Join(desc, ", "))
		}
		if st, err := c.RebuildStatus(ctx); err != nil || len(st.Tasks) > 0 {
			return fmt.Sprintf("moves still under way: %+v %v", st, err)
		}
		return ""
	})
	if why := healthy(ctx, c, names); why != "" {
		t.Fatal(why)
	}
	fresh := freshClient(t, cl)
	for _, n := range names {
		mustGet(t, ctx, fresh, n, files[n])
		got := make([]byte, len(files[n]))
		if k, err := open[n].ReadAt(got, 0); k != len(got) || !bytes.Equal(got, files[n]) {
			t.Errorf("%s through a handle opened before the moves: %d bytes, %v; differs", n, k, err)
		}
	}
}
