package admin

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/mungetest"
)

// fakeActions records the mutations that reached it.
type fakeActions struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeActions) StartScrub(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "scrub")
	return nil
}

func (f *fakeActions) Drain(_ context.Context, id string, cancel bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel {
		id = "un" + id
	}
	f.calls = append(f.calls, "drain "+id)
	return nil
}

func (f *fakeActions) done() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func doAuth(t *testing.T, method, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMutationsNeedAnAdmin: a mutating REST call without the token (or
// with a wrong one, or a replayed MUNGE credential) is 401 and changes
// nothing; with the token or root's MUNGE credential it is done; reads
// stay open.
func TestMutationsNeedAnAdmin(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := mungetest.Start(t)
	acts := &fakeActions{}
	s, err := New(Config{Listen: "127.0.0.1:0", TokenFile: tokenFile, MungeSocket: sock, AdminGID: -1},
		Deps{Source: &fakeSource{resp: leaderState()}, Actions: acts})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	base := "http://" + s.Addr()

	for _, auth := range []string{"", "Bearer wrong", "Bearer ", "Basic czNjcmV0", "Munge MUNGE:garbage:"} {
		if code, body := doAuth(t, http.MethodPost, base+"/v1/scrub", auth); code != http.StatusUnauthorized {
			t.Errorf("POST /v1/scrub with %q: %d %s, want 401", auth, code, body)
		}
		if code, _ := doAuth(t, http.MethodPost, base+"/v1/drain/ds1", auth); code != http.StatusUnauthorized {
			t.Errorf("POST /v1/drain/ds1 with %q: %d, want 401", auth, code)
		}
	}
	if got := acts.done(); len(got) != 0 {
		t.Fatalf("refused calls reached the MDS: %v", got)
	}
	if code, _ := doAuth(t, http.MethodGet, base+"/v1/cluster", ""); code != http.StatusOK {
		t.Errorf("GET /v1/cluster without a token: %d, want 200", code)
	}
	if code, body := doAuth(t, http.MethodPost, base+"/v1/scrub", "Bearer s3cret-token"); code != http.StatusAccepted {
		t.Errorf("POST /v1/scrub with the token: %d %s", code, body)
	}
	cred, err := identity.Munge{Socket: sock}.Encode(context.Background(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	mungeHdr := identity.FormatHeader(identity.SchemeMunge, cred)
	if code, body := doAuth(t, http.MethodPost, base+"/v1/drain/ds1", mungeHdr); code != http.StatusOK {
		t.Errorf("POST /v1/drain/ds1 with root's MUNGE credential: %d %s", code, body)
	}
	if code, body := doAuth(t, http.MethodDelete, base+"/v1/drain/ds1", mungeHdr); code != http.StatusUnauthorized || !strings.Contains(body, "replayed") {
		t.Errorf("replayed MUNGE credential: %d %s, want 401 (replayed)", code, body)
	}
	if got := strings.Join(acts.done(), ","); got != "scrub,drain ds1" {
		t.Errorf("calls done: %s", got)
	}
}

// TestTokenFileMustBePrivate: a token file others may read is refused.
func TestTokenFileMustBePrivate(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Listen: "127.0.0.1:0", TokenFile: f}, Deps{Source: &fakeSource{}}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("New with a 0644 token file: %v", err)
	}
}
