package identity

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"
)

var (
	testSecret = bytes.Repeat([]byte{9}, 32)
	lo         = netip.MustParseAddr("127.0.0.1")
	remote     = netip.MustParseAddr("10.1.2.3")
)

type fixedGroups map[uint32][]uint32

func (g fixedGroups) Groups(uid uint32) []uint32 { return g[uid] }

func newTestVerifier(now *time.Time, nm Nodemap, admin int64) *Verifier {
	return NewVerifier(VerifierConfig{Secret: testSecret, Nodemap: nm, AdminGroup: admin,
		Groups: fixedGroups{1000: {1000, 50}, 0: {0}}, Clock: func() time.Time { return *now }})
}

func TestSessionVerify(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	v := newTestVerifier(&now, Nodemap{}, -1)
	s, id, err := v.OpenSession(&MungeCred{Uid: 1000, Gid: 1000, Payload: []byte(SessionPayload)}, remote, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if id.Uid != 1000 || !id.InGroup(50) || id.Admin || id.Role != RoleUser {
		t.Fatalf("session identity %+v", id)
	}
	hdr := []byte(FormatHeader(SchemeSession, s.Encode()))
	got, err := v.Verify(hdr, remote)
	if err != nil || got.Uid != 1000 || got.Principal != id.Principal {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	// The token of another node is refused, as is a forged one.
	if _, err := v.Verify(hdr, lo); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token from another node: %v", err)
	}
	forged := *s
	forged.Uid = 0
	if _, err := v.Verify([]byte(FormatHeader(SchemeSession, forged.Encode())), remote); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token with its uid changed: %v", err)
	}
	// Expired: refused even though the verifier has seen it before.
	now = now.Add(2 * time.Minute)
	if _, err := v.Verify(hdr, remote); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expired token: %v", err)
	}
	// A credential minted for another service does not open a session.
	if _, _, err := v.OpenSession(&MungeCred{Uid: 1000, Payload: []byte("slurm")}, remote, time.Minute); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("foreign payload: %v", err)
	}
}

func TestNodeCredentials(t *testing.T) {
	now := time.Now()
	v := newTestVerifier(&now, Nodemap{}, -1)
	nc := NewNodeCredentials(testSecret, RoleNode, "n1", "")
	h, err := nc.Header(WithActor(context.Background(), Actor{Uid: 1000, Gid: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify([]byte(h), remote)
	if err != nil || id.Uid != 1000 || id.Role != RoleNode || id.Admin || !id.InGroup(50) {
		t.Fatalf("acting for 1000: %+v %v", id, err)
	}
	h, _ = nc.Header(WithActor(context.Background(), Actor{}))
	if id, err := v.Verify([]byte(h), remote); err != nil || !id.Admin {
		t.Fatalf("root on a trusted node: %+v %v", id, err)
	}
	other := NewNodeCredentials(bytes.Repeat([]byte{8}, 32), RoleNode, "n1", "")
	h, _ = other.Header(context.Background())
	if _, err := v.Verify([]byte(h), remote); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("credential of another cluster's secret: %v", err)
	}
	if _, err := v.Verify(nil, remote); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("no credential: %v", err)
	}
	// A data server is never an admin, even as root.
	ds, _ := NewNodeCredentials(testSecret, RoleDS, "n1", "ds1").Header(context.Background())
	if id, err := v.Verify([]byte(ds), remote); err != nil || id.Admin || id.ID != "ds1" {
		t.Errorf("data server: %+v %v", id, err)
	}
}

func TestNodemap(t *testing.T) {
	rules, err := ParseRules("10.0.0.0/8=root, 192.168.1.7=all:500:600")
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := ParsePrefixes("10.1.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v := newTestVerifier(&now, Nodemap{Trusted: trusted, Rules: rules}, 50)
	root := NewNodeCredentials(testSecret, RoleNode, "n1", "")
	h, _ := root.Header(context.Background())
	if id, err := v.Verify([]byte(h), remote); err != nil || id.Uid != NobodyID || !id.Squashed || id.Admin {
		t.Errorf("root from a root-squashed network: %+v %v", id, err)
	}
	if _, err := v.Verify([]byte(h), netip.MustParseAddr("10.2.0.1")); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("node credential from an untrusted network: %v", err)
	}
	s, _, _ := v.OpenSession(&MungeCred{Uid: 1000, Gid: 1000, Payload: []byte(SessionPayload)}, netip.MustParseAddr("192.168.1.7"), time.Minute)
	id, err := v.Verify([]byte(FormatHeader(SchemeSession, s.Encode())), netip.MustParseAddr("192.168.1.7"))
	if err != nil || id.Uid != 500 || id.Gid != 600 || !id.Squashed {
		t.Errorf("all-squashed host: %+v %v", id, err)
	}
	// The admin group makes an admin of a user.
	s, _, _ = v.OpenSession(&MungeCred{Uid: 1000, Gid: 1000, Payload: []byte(SessionPayload)}, lo, time.Minute)
	if id, err := v.Verify([]byte(FormatHeader(SchemeSession, s.Encode())), lo); err != nil || !id.Admin {
		t.Errorf("member of the admin group: %+v %v", id, err)
	}
	for _, bad := range []string{"10.0.0.0/8", "10.0.0.0/8=some", "x=root", "1.2.3.4=all:a:b", "1.2.3.4=root:1"} {
		if _, err := ParseRules(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseRules(%q) = %v", bad, err)
		}
	}
}

func TestParseUnmunge(t *testing.T) {
	out := "STATUS:          0\nENCODE_HOST:     127.0.0.1\nUID:             1000\nGID:             100\nLENGTH:          3\n\nabc"
	mc, err := ParseUnmunge([]byte(out))
	if err != nil || mc.Status != 0 || mc.Uid != 1000 || mc.Gid != 100 || string(mc.Payload) != "abc" || mc.Host != "127.0.0.1" {
		t.Fatalf("ParseUnmunge = %+v, %v", mc, err)
	}
	for _, bad := range []string{"", "STATUS: 0\n\n", "STATUS: x\nUID: 1\nGID: 1\n\n", "UID: 1\nGID: 1\n\n"} {
		if _, err := ParseUnmunge([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseUnmunge(%q) = %v", bad, err)
		}
	}
}

// BenchmarkVerify is the cost of authenticating one call with a session
// token the verifier has seen (the hot path of every MDS call).
func BenchmarkVerify(b *testing.B) {
	now := time.Now()
	v := newTestVerifier(&now, Nodemap{}, -1)
	s, _, err := v.OpenSession(&MungeCred{Uid: 1000, Gid: 1000, Payload: []byte(SessionPayload)}, lo, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	hdr := []byte(FormatHeader(SchemeSession, s.Encode()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(hdr, lo); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
