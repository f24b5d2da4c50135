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
		{"admin any inode", admin, 99, OpAdmin, nil},
	} {
		if err := tc.tok.Verify(secret, now, tc.ino, 1, tc.op); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}
