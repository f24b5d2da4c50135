package client_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/qos"
)

// TestQoSTagReachesDataServer: a file opened with a QoS tag is served by
// the data server under that job and class, a client may not ask for a
// repair class, and an untagged file is the client's default (io).
func TestQoSTagReachesDataServer(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	data := bytes.Repeat([]byte("q"), 1<<20)
	tagged := client.WithTag(ctx, qos.Tag{Job: "4242", Class: qos.ClassDrain})
	f, err := c.OpenFile(tagged, "/drained", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := c.Open(ctx, "/drained")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := g.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
	_ = g.Close()
	served := map[qos.Tag]int64{}
	for _, j := range cl.DS(0).QoSStats().Jobs {
		cls, _ := qos.ParseClass(j.Class)
		served[qos.Tag{Job: j.Job, Class: cls}] += j.Served
	}
	if n := served[qos.Tag{Job: "4242", Class: qos.ClassDrain}]; n < int64(len(data)) {
		t.Fatalf("data server served %d bytes as job 4242/drain, want >= %d (all: %v)", n, len(data), served)
	}
	if n := served[qos.Tag{Class: qos.ClassIO}]; n < int64(len(data)) {
		t.Fatalf("data server served %d bytes untagged io, want >= %d (all: %v)", n, len(data), served)
	}
	_, err = c.Open(client.WithTag(ctx, qos.Tag{Job: "4242", Class: qos.ClassRebuild}), "/drained")
	if err == nil || !strings.Contains(err.Error(), "not one a client may ask for") {
		t.Fatalf("open tagged rebuild: %v, want refused", err)
	}
}
