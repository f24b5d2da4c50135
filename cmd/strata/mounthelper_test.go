package main

import (
	"strings"
	"testing"
)

func TestMountHelperArgs(t *testing.T) {
	dir := t.TempDir()
	r := strata(t, nil, mountHelperName, "strata:m1:7000,m2:7000", dir, "-o", "defaults,_netdev,noauto,x-systemd.automount,ro,attr_timeout=5", "-fv").ok(t)
	want := "strata mount --mds m1:7000,m2:7000 --fsname strata:m1:7000,m2:7000 -o ro,attr_timeout=5 " + dir
	if !strings.Contains(r.stdout, want) {
		t.Errorf("-v printed %q, want %q", r.stdout, want)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"strata:", dir}, 2, `source "strata:"`},
		{[]string{"strata:m1:7000,,m2:7000", dir}, 2, "want strata:MDS"},
		{[]string{"strata:m1:7000"}, 2, "want strata:MDS[,MDS...] MOUNTPOINT"},
		{[]string{"strata:m1:7000", dir + "/nope"}, 1, "no such directory"},
		{[]string{"strata:m1:7000", dir, "-o"}, 2, "-o needs a value"},
	} {
		strata(t, nil, append([]string{mountHelperName}, tc.args...)...).fails(t, tc.code, tc.want)
	}
}
