package identity

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// SessionOpener opens a session at the MDS with the Authorization header
// mungeHeader (a MUNGE credential) and returns the token and its expiry.
type SessionOpener func(ctx context.Context, mungeHeader string) (token []byte, expiry time.Time, err error)

// SessionCredentials are a user's process's: a session token, opened with
// a fresh MUNGE credential when there is none or less than a fifth of its
// life is left. It is safe for concurrent use; one caller opens while the
// others wait.
type SessionCredentials struct {
	munge Munge
	open  SessionOpener
	clock func() time.Time

	mu     sync.Mutex
	header string
	start  time.Time
	expiry time.Time
}

var _ Credentials = (*SessionCredentials)(nil)

// NewSessionCredentials returns credentials that prove this process's uid
// to munged at m's socket and open sessions with open.
func NewSessionCredentials(m Munge, open SessionOpener) *SessionCredentials {
	return &SessionCredentials{munge: m, open: open, clock: time.Now}
}

// Header returns the session token's header, opening a session first when
// needed.
func (s *SessionCredentials) Header(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if s.header != "" && now.Before(s.expiry.Add(-s.expiry.Sub(s.start)/5)) {
		return s.header, nil
	}
	cred, err := s.munge.Encode(ctx, SessionPayload)
	if err != nil {
		return "", err
	}
	tok, exp, err := s.open(ctx, FormatHeader(SchemeMunge, cred))
	if err != nil {
		return "", fmt.Errorf("open a session: %w", err)
	}
	s.header, s.start, s.expiry = FormatHeader(SchemeSession, tok), now, exp
	return s.header, nil
}

// Forget drops the session, so that the next call opens a new one (after
// the MDS refused the token).
func (s *SessionCredentials) Forget() {
	s.mu.Lock()
	s.header = ""
	s.mu.Unlock()
}
