package client_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

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
