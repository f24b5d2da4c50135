package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const mod = "github.com/strata-hpc/strata"
	m := &struct{ Path string }{mod}
	pkgs := []pkg{
		{ImportPath: mod + "/layout", Module: m, Deps: []string{"fmt", "github.com/klauspost/reedsolomon"}},
		{ImportPath: mod + "/qos", Module: m, Deps: []string{"github.com/shirou/gopsutil/v4/disk"}},
		{ImportPath: mod + "/jobtier/plan", Module: m, Deps: []string{mod + "/daemon/rpc"}},
		{ImportPath: mod + "/mpiio", Module: m, Deps: []string{mod + "/client", "github.com/valyala/fasthttp"}},
		{ImportPath: mod + "/layoutx", Module: m, Deps: []string{"github.com/valyala/fasthttp"}},
		{ImportPath: mod + "/daemon/admin", Module: m, Imports: []string{mod + "/daemon/rpc", mod + "/layout"}},
		{ImportPath: mod + "/daemon/ds", Module: m, Imports: []string{mod + "/daemon/mds/wire"}},
		{ImportPath: mod + "/daemon/mds/sub", Module: m, Imports: []string{mod + "/daemon/mds"}},
		{ImportPath: mod + "/internal/localcluster", Module: m, Imports: []string{mod + "/daemon/mds", mod + "/daemon/ds"}},
		{ImportPath: "fmt"},
	}
	got := strings.Join(check(pkgs), "\n")
	want := strings.Join([]string{
		"daemon/ds imports daemon/mds/wire: a daemon imports no other daemon's package (only daemon/rpc)",
		"jobtier/plan depends on " + mod + "/daemon/rpc: policy packages know nothing of daemons",
		"mpiio depends on " + mod + "/client: policy packages know nothing of the client",
		"mpiio depends on github.com/valyala/fasthttp: policy packages use no HTTP, raft, FUSE or gopsutil",
		"qos depends on github.com/shirou/gopsutil/v4/disk: policy packages use no HTTP, raft, FUSE or gopsutil",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
