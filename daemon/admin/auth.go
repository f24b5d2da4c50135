package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"

	"github.com/strata-hpc/strata/internal/identity"
)

// Mutations of the admin API (every method but GET and HEAD) need an
// admin: a bearer token equal to the one in Config.TokenFile (a file only
// its owner may read), or a MUNGE credential of root or of a member of
// Config.AdminGID, verified by munged. Reads stay open to whoever reaches
// Config.Listen. Config.Token (given inline) is accepted as a bearer
// token too.

// tokenOf reads a bearer token file: it must exist, hold a non-empty
// token, and be readable by its owner only.
func tokenOf(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("admin: token file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("admin: token file %s is mode %o: it must be readable by its owner only (chmod 600)", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admin: token file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("admin: token file %s is empty", path)
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// authorize checks the Authorization header of a mutation.
func (s *Server) authorize(ctx context.Context, hdr []byte) error {
	h := string(hdr)
	switch {
	case h == "" && s.token == nil:
		return fmt.Errorf("%w: the admin API's changes are off without a credential (no admin token is configured); send an admin's MUNGE credential, or as root use the strata command", ErrForbidden)
	case h == "":
		return fmt.Errorf("%w: this call changes state: send Authorization: Bearer <token> (the admin token) or a MUNGE credential", ErrUnauthorized)
	case strings.HasPrefix(h, "Bearer "):
		if s.token == nil {
			return fmt.Errorf("%w: no admin token is configured (admin_token_file)", ErrForbidden)
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(h[len("Bearer "):])))
		if subtle.ConstantTimeCompare(sum[:], s.token) != 1 {
			return fmt.Errorf("%w: wrong admin token", ErrUnauthorized)
		}
		return nil
	}
	scheme, cred, err := identity.ParseHeader(hdr)
	if err != nil || scheme != identity.SchemeMunge {
		return fmt.Errorf("%w: want a bearer token or a MUNGE credential", ErrUnauthorized)
	}
	mc, err := s.munge.Decode(ctx, cred)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if mc.Uid == 0 || (s.cfg.AdminGID >= 0 && mc.Gid == uint32(s.cfg.AdminGID)) {
		return nil
	}
	return fmt.Errorf("%w: uid %d is not an admin", ErrForbidden, mc.Uid)
}
