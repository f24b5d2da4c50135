package mds

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

func TestStartServeClose(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(2)
	d := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "d", Mode: 0o755})
	f := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: d.Attr.Ino, Name: "f", Mode: 0o644, Exclusive: true})
	if !f.Created || !f.Attr.IsFile() || f.Attr.Mode&0o777 != 0o644 {
		t.Fatalf("create = %+v", f)
	}
	w := must[rpc.AttrResp](m, rpc.MWalk, &rpc.WalkReq{Path: "/d/f"})
	if w.Attr.Ino != f.Attr.Ino {
		t.Fatalf("walk /d/f = %d, want %d", w.Attr.Ino, f.Attr.Ino)
	}
	cl, err := m.Cluster(context.Background())
	if err != nil || cl.Role != "leader" || cl.Inodes != 3 || len(cl.DataSvrs) != 2 || cl.DataSvrs[0].State != "up" {
		t.Fatalf("cluster = %+v, %v", cl, err)
	}
	var buf bytes.Buffer
	if err := m.WriteMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`strata_mds_ops_total{op="create"} 1`,
		`strata_mds_ops_total{op="mkdir"} 1`,
		"strata_mds_inodes 3",
		"strata_mds_is_leader 1",
		`strata_ds_up{ds="ds1"} 1`,
		`strata_ds_capacity_bytes{ds="ds2"} 1099511627776`,
		"# TYPE strata_mds_raft_term gauge",
		"# HELP strata_ds_free_bytes ",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, buf.String())
		}
	}
}
