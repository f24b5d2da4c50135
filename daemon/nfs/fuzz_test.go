package nfs

import (
	"context"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// FuzzCompound decodes arbitrary COMPOUND arguments, starting with
// EXCHANGE_ID, CREATE_SESSION or SEQUENCE, which need no MDS: no panic,
// and a reply whose header decodes with one result per op performed.
func FuzzCompound(f *testing.F) {
	ccfg := client.DefaultConfig()
	ccfg.MDS = "127.0.0.1:1"
	ccfg.Timeout = 10 * time.Millisecond
	ccfg.FailoverTimeout = time.Millisecond
	cl, err := client.New(ccfg)
	if err != nil {
		f.Fatal(err)
	}
	defer cl.Close()
	cfg := DefaultConfig()
	cfg.HandleKey = []byte("fuzz")
	s, err := New(cfg, Deps{Client: cl})
	if err != nil {
		f.Fatal(err)
	}
	s.ctx = context.Background()
	seed := xdr.NewWriter(nil)
	seed.String("tag")
	seed.Uint32(1)
	seed.Uint32(1)
	seed.Uint32(opExchangeID)
	seed.Fixed([]byte("verifier"))
	seed.String("owner")
	seed.Uint32(0)
	seed.Uint32(0)
	seed.Uint32(0)
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 43})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &compound{s: s, ctx: context.Background(), call: &oncrpc.Call{Sys: &oncrpc.SysCred{}}}
		w := xdr.NewWriter(nil)
		if !c.run(xdr.NewReader(b), w) {
			return
		}
		r := xdr.NewReader(w.Bytes())
		r.Uint32()
		r.Opaque(maxTag)
		n := r.Count(cfg.MaxOps+1, 8)
		if r.Err() != nil {
			t.Fatalf("reply header does not decode: %v", r.Err())
		}
		if n > cfg.MaxOps+1 {
			t.Fatalf("%d results", n)
		}
	})
}
