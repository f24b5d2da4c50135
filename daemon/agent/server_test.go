package agent

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/jobtier"
)

// startAgent starts an agent whose tiers nobody will build (no global MDS,
// no strata binary): the socket protocol and the paths that need no tier.
func startAgent(t *testing.T) (*Server, Config) {
	t.Helper()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Node, cfg.Addr, cfg.GlobalMDS = "n1", "127.0.0.1", "127.0.0.1:1"
	cfg.Secret = bytes.Repeat([]byte{3}, 32)
	cfg.Strata = "/bin/false"
	cfg.Socket = filepath.Join(dir, "run", "agent.sock")
	cfg.StateDir, cfg.NVMeDir = filepath.Join(dir, "state"), filepath.Join(dir, "nvme")
	cfg.HintsDir = filepath.Join(dir, "hints")
	cfg.Tier.DefaultMount = filepath.Join(dir, "mnt", "%j")
	s, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, cfg
}

func call(t *testing.T, socket, line string) jobtier.HookReply {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	r, err := jobtier.ReadHookReply(bufio.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the agent answers root only: run as root")
	}
	_, cfg := startAgent(t)
	fi, err := os.Stat(cfg.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, mode %v; want 0600", err, fi.Mode())
	}
	// A tier left mounted on nothing: the epilog of a job the agent never
	// saw still removes what is left of it.
	left := filepath.Join(filepath.Dir(cfg.Tier.DefaultMount), "9")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want jobtier.HookReply
	}{
		{`{"op":"status","job_id":7,"uid":1,"gid":1,"node":"n1"}`,
			jobtier.HookReply{Error: "no storage tier was set up for job 7 on node n1"}},
		{`{"op":"status","job_id":7,"uid":1,"gid":1,"node":"n2"}`,
			jobtier.HookReply{Error: "strata agent of node n1 was asked for node n2 (check plugstack.conf socket=)"}},
		{`{"op":"prolog","job_id":7,"node":"n1"}`,
			jobtier.HookReply{Error: "strata agent: jobtier: bad hook message: prolog needs nodes and spec"}},
		{`{"op":"prolog","job_id":7,"uid":1,"gid":1,"nodes":"n[1-2]","node":"n1","spec":"capacity=lots"}`,
			jobtier.HookReply{Error: `storage-tier: item "capacity=lots": capacity must be a size like 200G`, UserError: true}},
		{`{"op":"prolog","job_id":7,"uid":1,"gid":1,"nodes":"n[2-3]","node":"n1","spec":"capacity=1G"}`,
			jobtier.HookReply{Error: "strata agent on n1: prolog of job 7: node n1 is not in the job's node list n[2-3]"}},
		{`{"op":"epilog","job_id":9,"uid":1,"gid":1,"nodes":"n1","node":"n1","spec":"capacity=1G"}`,
			jobtier.HookReply{OK: true}},
		{`{"op":"epilog","job_id":9,"uid":1,"gid":1,"nodes":"n1","node":"n1","spec":"capacity=1G"}`,
			jobtier.HookReply{OK: true}},
	} {
		if got := call(t, cfg.Socket, tc.line); got != tc.want {
			t.Errorf("%s\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("epilog left %s (%v)", left, err)
	}
	if got := call(t, cfg.Socket, `not json`); !strings.Contains(got.Error, "want a JSON object") || got.OK {
		t.Errorf("garbage: %+v", got)
	}
}

// TestAdoptFailsCutProlog checks that a tier whose prolog an agent restart
// cut short is failed on adoption, with a reason the job sees.
func TestAdoptFailsCutProlog(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the agent answers root only: run as root")
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "jobs")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	st := `{"job":5,"uid":1,"gid":1,"spec":"capacity=1G","nodes":["n1"],"index":0,"phase":"assembling","procs":{"ds":{"pid":999999999,"start":1}}}`
	if err := os.WriteFile(filepath.Join(state, "5.json"), []byte(st), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Node, cfg.Addr, cfg.GlobalMDS = "n1", "127.0.0.1", "127.0.0.1:1"
	cfg.Secret = bytes.Repeat([]byte{3}, 32)
	cfg.Strata = "/bin/false"
	cfg.Socket = filepath.Join(dir, "agent.sock")
	cfg.StateDir, cfg.NVMeDir = filepath.Join(dir, "state"), filepath.Join(dir, "nvme")
	cfg.HintsDir = filepath.Join(dir, "hints")
	s, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := call(t, cfg.Socket, `{"op":"status","job_id":5,"uid":1,"gid":1,"node":"n1"}`)
	if got.OK || got.Error != "the strata agent on n1 restarted while it set up the storage tier" {
		t.Errorf("status of a cut prolog's tier: %+v", got)
	}
	if got := call(t, cfg.Socket, `{"op":"epilog","job_id":5,"uid":1,"gid":1,"nodes":"n1","node":"n1","spec":"capacity=1G"}`); !got.OK {
		t.Errorf("epilog: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(state, "5.json")); !os.IsNotExist(err) {
		t.Errorf("state file after the epilog: %v", err)
	}
}
