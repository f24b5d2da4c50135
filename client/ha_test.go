package client_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestLeaderKilledUnderLoad: three MDS voters; while clients create and
// rename files, the leader is killed (twice, with a restart in between).
// Clients carry on against the new leader, and every create and rename
// that was acknowledged is there at the end.
func TestLeaderKilledUnderLoad(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 13))
	cl := testcluster.Start(t, 2, testcluster.WithMDS(3))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	// Under load the voters may elect again right after they start: a
	// mkdir whose reply was lost with a leader is retried and reports
	// EEXIST for the directory it made (no reply cache; see failover.go).
	if err := c.Mkdir(ctx, "/load", 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked = map[string]bool{} // final names of acknowledged files
		errs  []error
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cl.Client()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("/load/w%d-%d", w, i)
				f, err := c.OpenFile(ctx, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err == nil {
					err = f.Close()
				}
				if errors.Is(err, syscall.EEXIST) {
					err = nil // a create whose reply was lost with the old leader, retried
				}
				if err == nil && i%3 == 0 {
					renamed := name + ".r"
					if err = c.Rename(ctx, name, renamed); err == nil || errors.Is(err, syscall.ENOENT) {
						name, err = renamed, nil // ENOENT: a rename retried after it was applied
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
				} else {
					acked[name] = true
				}
				mu.Unlock()
			}
		}(w)
	}
	for round := 0; round < 2; round++ {
		time.Sleep(time.Duration(300+rnd.IntN(300)) * time.Millisecond)
		leader := waitLeader(t, cl)
		t.Logf("round %d: killing leader mds%d", round, leader+1)
		if err := cl.StopMDSReplica(leader); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(500+rnd.IntN(500)) * time.Millisecond)
		if err := cl.StartMDSReplica(ctx, leader); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d calls failed across the failovers, first: %v", len(errs), errs[0])
	}
	ents, err := c.ReadDir(ctx, "/load")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range ents {
		have["/load/"+e.Name] = true
	}
	var lost []string
	for name := range acked {
		if !have[name] {
			lost = append(lost, name)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged names lost, e.g. %v", len(lost), len(acked), lost[:min(5, len(lost))])
	}
	t.Logf("%d acknowledged creates/renames, all present after 2 leader kills", len(acked))
}

// TestVoters: a replica joins and leaves through the leader; a follower
// redirects clients; the last voter cannot be removed.
func TestVoters(t *testing.T) {
	cl := testcluster.Start(t, 1, testcluster.WithMDS(3))
	ctx := testcluster.Context(t, time.Minute)
	leader := waitLeader(t, cl)
	follower := (leader + 1) % 3

	// A client that only knows a follower is redirected to the leader.
	cfg := client.DefaultConfig()
	cfg.MDS = cl.MDSReplicaAddr(follower)
	cfg.Auth = cl.Credentials()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mkdir(ctx, "/via-follower", 0o755); err != nil {
		t.Fatalf("mkdir through a follower: %v", err)
	}

	rc := rpc.NewClient(rpc.ClientConfig{Auth: cl.Credentials().Header})
	defer rc.Close()
	var r rpc.ClusterResp
	// Remove the two replicas that do not lead: the leader is left alone.
	// Each removal goes to the leader of the moment (on a loaded machine
	// leadership may move between them).
	// A removal whose leader lost office while committing it answers
	// NotLeader and may have been committed: the retry then finds the
	// voter gone (ENOENT).
	removed, retried := map[int]bool{}, map[int]bool{}
	deadline := time.Now().Add(30 * time.Second)
	var last int
	for len(removed) < 2 {
		last = waitLeader(t, cl)
		i := 0
		for i == last || removed[i] {
			i++
		}
		err := rc.Call(ctx, cl.MDSReplicaAddr(last), rpc.MRemoveVoter, &rpc.VoterReq{ID: fmt.Sprintf("mds%d", i+1)}, &r)
		var re *rpc.Error
		switch {
		case err == nil, retried[i] && errors.Is(err, syscall.ENOENT):
			removed[i] = true
		case removed[last] || errors.As(err, &re) && re.NotLeader && time.Now().Before(deadline):
			retried[i] = true
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("remove mds%d: %v", i+1, err)
		}
	}
	if len(r.Voters) != 1 {
		t.Fatalf("voters after two removals: %+v", r.Voters)
	}
	err = rc.Call(ctx, cl.MDSReplicaAddr(last), rpc.MRemoveVoter, &rpc.VoterReq{ID: fmt.Sprintf("mds%d", last+1)}, &r)
	if !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("removing the last voter: %v, want EBUSY", err)
	}
	// The namespace still works with the lone voter.
	if _, err := c.Stat(ctx, "/via-follower"); err != nil {
		t.Fatalf("stat after shrinking to one voter: %v", err)
	}
}

// waitLeader returns the leading replica, waiting out an election (a
// replica just restarted may still be campaigning on a loaded machine).
func waitLeader(t *testing.T, cl *testcluster.Cluster) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if l := cl.Leader(); l >= 0 {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatal("no MDS leader elected within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
