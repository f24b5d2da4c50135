package ds

import (
	"context"
	"net/netip"

	"github.com/strata-hpc/strata/internal/identity"
)

// authenticate verifies the credential a call carries, if any, and puts
// the caller's identity in the handler's context: a capability bound to a
// client (capability.Token.Client) is served only to that client's
// credential. A call without one reaches its handler without an identity
// (the MDS's own calls, whose capabilities name no client); a credential
// that does not verify is refused.
func (s *Server) authenticate(ctx context.Context, _ string, hdr []byte, peer netip.Addr) (context.Context, error) {
	if len(hdr) == 0 {
		return ctx, nil
	}
	id, err := s.auth.Verify(hdr, peer)
	if err != nil {
		return nil, err
	}
	return identity.NewContext(ctx, id), nil
}

// noGroups resolves no groups: a data server needs only a caller's
// principal, never its groups.
type noGroups struct{}

func (noGroups) Groups(uint32) []uint32 { return nil }
