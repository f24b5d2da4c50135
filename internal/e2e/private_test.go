package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/tiertest"
)

// (9) A job tier is private: while alice's job runs, bob cannot list,
// read or write her tier through the node's mount path, nor by talking to
// her tier's MDS or data servers himself (issue 9 item 6); alice can.
func testPrivate(t *testing.T, e *tiertest.Env) {
	tiertest.User(t, "strata-alice")
	tiertest.User(t, "strata-bob")
	ready := filepath.Join(outDir(e), "private-ready")
	_ = os.Remove(ready)
	script := writeOut(t, e, "private.sh", []byte(`#!/bin/sh
set -e
echo "alice's data" > $STRATA_TIER_DIR/secret.txt
chmod 644 $STRATA_TIER_DIR/secret.txt
touch `+ready+`
sleep 300
`), 0o755)
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--uid=strata-alice", "--gid=strata-alice", "--storage-tier=capacity=1G", script)
	defer func() { _, _ = e.Run("scancel", strconv.Itoa(int(id))) }()
	if err := tiertest.WaitFile(ready, 2*60e9); err != nil {
		job, _ := e.ShowJob(id)
		t.Fatalf("%v; job %d is %s", err, id, job.State)
	}
	mnt := e.MountPath(id)
	st, err := e.Tier("n1", id)
	if err != nil {
		t.Fatal(err)
	}

	// Through the mount path, on both nodes.
	for _, n := range []string{"n1", "n2"} {
		for what, cmd := range map[string]string{
			"list":  "ls " + mnt,
			"read":  "cat " + mnt + "/secret.txt",
			"write": "echo bob > " + mnt + "/bob.txt",
		} {
			out, err := e.AsUser(n, "strata-bob", cmd)
			if err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("bob could %s alice's tier on %s by path: %v: %s", what, n, err, out)
			}
		}
		if out, err := e.AsUser(n, "strata-alice", "cat "+mnt+"/secret.txt"); err != nil || out != "alice's data\n" {
			t.Errorf("alice reads her tier on %s: %v: %q", n, err, out)
		}
	}

	// His own strata commands against her tier's MDS: refused.
	for what, cmd := range map[string]string{
		"list": "STRATA_MDS=" + st.MDSAddr + " strata ls /",
		"read": "STRATA_MDS=" + st.MDSAddr + " strata cat /secret.txt",
	} {
		out, err := e.AsUser("n2", "strata-bob", cmd)
		if err == nil || !strings.Contains(strings.ToLower(out), "permission denied") {
			t.Errorf("bob could %s alice's tier through its MDS: %v: %s", what, err, out)
		}
	}
	if out, err := e.AsUser("n2", "strata-alice", "STRATA_MDS="+st.MDSAddr+" strata cat /secret.txt"); err != nil || out != "alice's data\n" {
		t.Errorf("alice reads her tier through its MDS: %v: %q", err, out)
	}

	// Raw calls: his verified MUNGE credential opens no session at her
	// tier's MDS, and her data servers refuse a capability he did not get.
	cred, err := e.AsUser("n2", "strata-bob", `munge -S "$STRATA_MUNGE_SOCKET" -s `+identity.SessionPayload)
	if err != nil {
		t.Fatalf("munge as bob: %v: %s", err, cred)
	}
	raw := rpc.NewClient(rpc.ClientConfig{})
	defer raw.Close()
	ctx := context.Background()
	mungeHdr := identity.FormatHeader(identity.SchemeMunge, []byte(strings.TrimSpace(cred)))
	err = raw.Call(rpc.WithAuthorization(ctx, mungeHdr), st.MDSAddr, rpc.MAuthSession, &rpc.Empty{}, &rpc.AuthSessionResp{})
	if !errorsIsErrno(err, syscall.EACCES) || !strings.Contains(err.Error(), "serves only") {
		t.Errorf("bob's session at alice's tier MDS: %v, want EACCES", err)
	}
	secret, err := capability.ReadSecretFile(filepath.Join(e.Dir, "strata", "agent", "n1", "jobs", strconv.Itoa(int(id)), "secret"))
	if err != nil {
		t.Fatal(err)
	}
	node, _ := identity.NewNodeCredentials(secret, identity.RoleNode, "n1", "").Header(ctx)
	root := rpc.WithAuthorization(ctx, node)
	var f rpc.AttrResp
	if err := raw.Call(root, st.MDSAddr, rpc.MLookup, &rpc.EntryReq{Parent: rpc.RootIno, Name: "secret.txt"}, &f); err != nil {
		t.Fatal(err)
	}
	var lg rpc.LayoutGetResp
	if err := raw.Call(root, st.MDSAddr, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: f.Attr.Ino}, &lg); err != nil {
		t.Fatal(err)
	}
	req := &rpc.DSReq{Cap: lg.Cap, ID: rpc.ComponentID{Ino: f.Attr.Ino, Gen: lg.Layout.Generation}, Len: 13}
	out := make([]byte, 13)
	if _, err := raw.CallData(root, lg.Layout.Addrs[0], rpc.DRead, req, nil, &rpc.DSResp{}, out); err != nil {
		t.Fatalf("the capability's holder reads: %v", err)
	}
	for name, c := range map[string]context.Context{"no capability": ctx, "a capability issued to another": ctx} {
		r := *req
		if name == "no capability" {
			r.Cap = capability.Token{}
		}
		if _, err := raw.CallData(c, lg.Layout.Addrs[0], rpc.DRead, &r, nil, &rpc.DSResp{}, out); !errorsIsErrno(err, syscall.EACCES) {
			t.Errorf("read of alice's tier data server with %s: %v, want EACCES", name, err)
		}
	}
}

func errorsIsErrno(err error, n syscall.Errno) bool { return err != nil && rpc.ToErrno(err) == n }
