package capability

import (
	"errors"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	secret, _ := NewSecret()
	other, _ := NewSecret()
	now := time.Unix(1000, 0)
	good := Token{Ino: 7, Gen: 1, Ops: OpRead | OpWrite, Expiry: now.Add(time.Minute).UnixNano()}
	good.Sign(secret)

	forged := good
	forged.Ops |= OpAdmin // escalation without re-signing
	wrongKey := good
	wrongKey.Sign(other)
	expired := Token{Ino: 7, Gen: 1, Ops: OpRead, Expiry: now.Add(-time.Second).UnixNano()}
	expired.Sign(secret)
	admin := Token{Ops: OpAdmin, Expiry: now.Add(time.Minute).UnixNano()}
	admin.Sign(secret)

	for _, tc := range []struct {
		name string
		tok  Token
		ino  uint64
		op   Op
		want error
	}{
		{"good read", good, 7, OpRead, nil},
		{"good write", good, 7, OpWrite, nil},
		{"other inode", good, 8, OpRead, ErrScope},
		{"admin op", good, 7, OpAdmin, ErrDenied},
		{"forged ops", forged, 7, OpRead, ErrForged},
		{"wrong key", wrongKey, 7, OpRead, ErrForged},
		{"unsigned", Token{Ino: 7, Ops: OpRead, Expiry: now.Add(time.Hour).UnixNano()}, 7, OpRead, ErrForged},
		{"expired", expired, 7, OpRead, ErrExpired},
		// No wildcard: an admin token names one file too.
		{"admin any inode", admin, 99, OpAdmin, ErrScope},
	} {
		if err := tc.tok.Verify(secret, now, tc.ino, 1, tc.op); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestCheck: a rebuild token for one component on one target serves no
// other file, column or data server, and a client's token serves only the
// client it was issued to.
func TestCheck(t *testing.T) {
	secret, _ := NewSecret()
	now := time.Unix(1000, 0)
	exp := now.Add(time.Minute).UnixNano()
	rebuild := Token{Ino: 7, Gen: 2, Ops: OpAdmin, Expiry: exp, Target: "ds3", Comp: 1 + 1}
	rebuild.Sign(secret)
	client := Token{Ino: 7, Gen: 2, Ops: OpRead, Expiry: exp, Client: "s:abc"}
	client.Sign(secret)
	retargeted := rebuild
	retargeted.Target = "ds4" // not re-signed
	for _, tc := range []struct {
		name string
		tok  Token
		call Call
		want error
	}{
		{"rebuild its component", rebuild, Call{Ino: 7, Gen: 2, Col: 1, Op: OpWrite, Server: "ds3"}, nil},
		{"rebuild another file", rebuild, Call{Ino: 8, Gen: 2, Col: 1, Op: OpWrite, Server: "ds3"}, ErrScope},
		{"rebuild another column", rebuild, Call{Ino: 7, Gen: 2, Col: 0, Op: OpWrite, Server: "ds3"}, ErrTarget},
		{"rebuild another server", rebuild, Call{Ino: 7, Gen: 2, Col: 1, Op: OpWrite, Server: "ds4"}, ErrTarget},
		{"retargeted", retargeted, Call{Ino: 7, Gen: 2, Col: 1, Op: OpWrite, Server: "ds4"}, ErrForged},
		{"its client", client, Call{Ino: 7, Gen: 2, Col: 5, Op: OpRead, Server: "ds1", Client: "s:abc"}, nil},
		{"another client", client, Call{Ino: 7, Gen: 2, Col: 5, Op: OpRead, Server: "ds1", Client: "s:abd"}, ErrHolder},
		{"no credential", client, Call{Ino: 7, Gen: 2, Col: 5, Op: OpRead, Server: "ds1"}, ErrHolder},
	} {
		if err := tc.tok.Check(secret, now, tc.call); !errors.Is(err, tc.want) {
			t.Errorf("%s: Check = %v, want %v", tc.name, err, tc.want)
		}
	}
}
