package rpc

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"ds1", "node-07.cluster", "r12", "A_b-c.d", strings.Repeat("x", MaxNameLen)} {
		if err := CheckName("id", ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "ds1\nds2", "ds 1", "-ds", ".hidden", "ds/1", "ds\x1b[2J", "dé", strings.Repeat("x", MaxNameLen+1)} {
		if err := CheckName("id", bad); !errors.Is(err, ErrName) {
			t.Errorf("CheckName(%q) = %v, want ErrName", bad, err)
		}
	}
}

func FuzzCheckName(f *testing.F) {
	f.Add("ds1")
	f.Add("a\nb")
	f.Fuzz(func(t *testing.T, s string) {
		if CheckName("id", s) != nil {
			return
		}
		for _, c := range s {
			if c < '!' || c > '~' || c == '/' {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}
