package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestConcurrentCreates: files created at the same time by many
// goroutines of one client (their creates coalesced into mds.createmany
// calls) are each created once, hold what was written into them, and
// are all listed; of two exclusive creates of one name, one succeeds and
// the other fails with EEXIST.
func TestConcurrentCreates(t *testing.T) {
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, 5*time.Minute)
	if err := c.Mkdir(ctx, "/many", 0o755); err != nil {
		t.Fatal(err)
	}
	const workers, each = 32, 8
	errs := make(chan error, workers*each+2)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				name := fmt.Sprintf("/many/f%d-%d", w, i)
				f, err := c.OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
				if err != nil {
					errs <- err
					return
				}
				if _, err := f.Write([]byte(name)); err != nil {
					errs <- err
				}
				if err := f.Close(); err != nil {
					errs <- err
				}
			}
		}()
	}
	var won, lost int
	var mu sync.Mutex
	for k := 0; k < 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.OpenFile(ctx, "/many/race", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
				errs <- f.Close()
			case errors.Is(err, syscall.EEXIST):
				lost++
			default:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("two exclusive creates of one name: %d succeeded, %d failed with EEXIST; want 1 and 1", won, lost)
	}
	// Concurrent stats of every file (coalesced getattrs) each answer
	// their own file.
	statErrs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				name := fmt.Sprintf("/many/f%d-%d", w, i)
				a, err := c.Stat(ctx, name)
				if err == nil {
					var b *rpc.Attr
					if b, err = c.Getattr(ctx, a.Ino); err == nil && (b.Ino != a.Ino || b.Size != uint64(len(name))) {
						err = fmt.Errorf("getattr of %s (inode %d): inode %d, size %d; want size %d", name, a.Ino, b.Ino, b.Size, len(name))
					}
				}
				if err != nil {
					statErrs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(statErrs)
	for err := range statErrs {
		t.Fatal(err)
	}
	ents, err := c.ReadDir(ctx, "/many")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != workers*each+1 {
		t.Fatalf("/many lists %d entries, want %d", len(ents), workers*each+1)
	}
	for w := 0; w < workers; w += 7 {
		for i := 0; i < each; i += 3 {
			name := fmt.Sprintf("/many/f%d-%d", w, i)
			if got := string(readAll(t, ctx, c, name)); got != name {
				t.Fatalf("%s holds %q, want its name", name, got)
			}
		}
	}
}

// TestCreatesOlderMDS: against an MDS that does not know mds.createmany
// nor mds.getattrmany (an older version, answering ENOSYS), creates and
// getattrs still work, one mds.create or mds.getattr each, and answer
// their own errors.
func TestCreatesOlderMDS(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	mux := rpc.NewMux()
	rpc.Handle(mux, rpc.MCreate, func(_ context.Context, r *rpc.CreateReq) (*rpc.CreateResp, error) {
		mu.Lock()
		defer mu.Unlock()
		if names[r.Name] {
			return nil, rpc.Errorf(syscall.EEXIST, r.Name+" exists")
		}
		names[r.Name] = true
		return &rpc.CreateResp{Attr: rpc.Attr{Ino: uint64(len(names) + 1), Mode: rpc.TypeFile | r.Mode}, Created: true}, nil
	})
	rpc.Handle(mux, rpc.MGetattr, func(_ context.Context, r *rpc.InoReq) (*rpc.AttrResp, error) {
		if r.Ino > 100 {
			return nil, rpc.Errorf(syscall.ENOENT, "no such inode")
		}
		return &rpc.AttrResp{Attr: rpc.Attr{Ino: r.Ino, Mode: rpc.TypeFile | 0o600}}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.NewServer(mux, slog.New(slog.DiscardHandler), rpc.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	cfg := client.DefaultConfig()
	cfg.MDS = ln.Addr().String()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testcluster.Context(t, time.Minute)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = c.CreateIno(ctx, rpc.RootIno, fmt.Sprint("f", i%8), 0o644, rpc.Cred{}, true)
		}()
	}
	wg.Wait()
	var exist int
	for i, err := range errs {
		switch {
		case errors.Is(err, syscall.EEXIST):
			exist++
		case err != nil:
			t.Errorf("create %d: %v", i, err)
		}
	}
	if exist != 8 || len(names) != 8 {
		t.Fatalf("16 creates of 8 names: %d EEXIST, %d names created; want 8 and 8", exist, len(names))
	}
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ino := uint64(95 + i) // 101 and above do not exist
			a, err := c.Getattr(ctx, ino)
			switch {
			case ino > 100 && !errors.Is(err, syscall.ENOENT):
				errs[i] = fmt.Errorf("getattr %d: %v, want ENOENT", ino, err)
			case ino <= 100 && (err != nil || a.Ino != ino):
				errs[i] = fmt.Errorf("getattr %d: %+v, %v", ino, a, err)
			default:
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
