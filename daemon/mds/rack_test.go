package mds_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestRackFailureDomain: six data servers in three racks of two. A file's
// columns land in distinct racks; a layout wider than the racks is refused
// with a reason naming the failure domains; and when a data server dies,
// its component is rebuilt on the other server of its rack, the only one
// on a rack the file does not use.
func TestRackFailureDomain(t *testing.T) {
	rackOf := func(id string) string {
		var i int
		fmt.Sscanf(id, "ds%d", &i)
		return fmt.Sprintf("r%d", (i+1)/2)
	}
	cl := testcluster.Start(t, 6,
		testcluster.WithMDSConfig(fastRepair),
		testcluster.WithDSConfig(func(c *ds.Config) { c.Rack = rackOf(c.ID) }))
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	racks := func(targets []string) string {
		seen := map[string]bool{}
		for _, id := range targets {
			if seen[rackOf(id)] {
				return fmt.Sprintf("two columns in rack %s: %v", rackOf(id), targets)
			}
			seen[rackOf(id)] = true
		}
		return ""
	}
	data := random(31, 1<<20+77)
	for i := range 8 {
		l, _ := put(t, ctx, c, fmt.Sprintf("/rs%d", i), "unit=64K,scheme=rs:2+1", data)
		if why := racks(l.Targets); why != "" {
			t.Fatal(why)
		}
	}
	for _, spec := range []string{"width=4", "scheme=rs:4+2", "width=2,scheme=mirror:2"} {
		err := c.Mkdir(ctx, "/wide", 0o755)
		if err == nil {
			err = c.SetLayout(ctx, "/wide", spec)
			_ = c.Remove(ctx, "/wide")
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "distinct failure domains (racks") {
			t.Errorf("layout %s over 3 racks: %v, want EINVAL naming the failure domains", spec, err)
		}
	}
	l, _ := put(t, ctx, c, "/victim", "unit=64K,scheme=rs:2+1", data)
	victim := l.Targets[0]
	if err := cl.StopDS(dsIndex(t, cl, victim)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "rebuild of "+victim+"'s column", func() string { return healthy(ctx, c, []string{"/victim"}, victim) })
	info, err := c.GetLayout(ctx, "/victim")
	if err != nil {
		t.Fatal(err)
	}
	if why := racks(info.Layout.Targets); why != "" {
		t.Fatal("after the rebuild: " + why)
	}
	if got, want := rackOf(info.Layout.Targets[0]), rackOf(victim); got != want {
		t.Errorf("column 0 rebuilt on %s in rack %s, want the other server of rack %s", info.Layout.Targets[0], got, want)
	}
	mustGet(t, ctx, freshClient(t, cl), "/victim", data)
}
