package identity_test

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/mungetest"
)

// TestMungeReplay: a real munged vouches for this process's uid once; the
// same credential presented again is refused.
func TestMungeReplay(t *testing.T) {
	m := identity.Munge{Socket: mungetest.Start(t)}
	ctx := context.Background()
	cred, err := m.Encode(ctx, identity.SessionPayload)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := m.Decode(ctx, cred)
	if err != nil || string(mc.Payload) != identity.SessionPayload {
		t.Fatalf("first decode: %+v %v", mc, err)
	}
	if _, err := m.Decode(ctx, cred); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Fatalf("replayed credential: %v", err)
	}
	if _, err := m.Decode(ctx, []byte("MUNGE:AAAA:")); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Fatalf("garbage credential: %v", err)
	}
}
