package identity

import (
	"bytes"
	"testing"
)

// The decoders of identity material: none panics, and what decodes
// encodes back to the same bytes.

func FuzzDecodeSession(f *testing.F) {
	s := Session{ID: 7, Uid: 1000, Gid: 100, Groups: []uint32{4, 27}, Node: "10.0.0.1", Expiry: 99}
	s.Sign(DeriveKeys(bytes.Repeat([]byte{1}, 32)))
	f.Add(s.Encode())
	f.Add([]byte{sessionTag, sessionVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSession(b)
		if err != nil {
			return
		}
		if got := s.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b)
		}
	})
}

func FuzzDecodeNodeCred(f *testing.F) {
	c := NodeCred{Role: RoleDS, Node: "n1", ID: "ds1", Uid: 0, Gid: 0, Expiry: -5}
	c.Sign(DeriveKeys(bytes.Repeat([]byte{1}, 32)))
	f.Add(c.Encode())
	f.Add([]byte{nodeTag, nodeVersion, byte(RoleNode)})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeNodeCred(b)
		if err != nil {
			return
		}
		if got := c.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b)
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("StrataSession AAEC"))
	f.Add([]byte("Munge MUNGE:abc:"))
	f.Add([]byte("StrataNode " + FormatHeader(SchemeNode, []byte{1, 2, 3})[len("StrataNode "):]))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, cred, err := ParseHeader(b)
		if err != nil || s == SchemeNone {
			return
		}
		s2, cred2, err := ParseHeader([]byte(FormatHeader(s, cred)))
		if err != nil || s2 != s || !bytes.Equal(cred, cred2) {
			t.Fatalf("%q: re-parsed as %v %q %v", b, s2, cred2, err)
		}
	})
}

func FuzzParseUnmunge(f *testing.F) {
	f.Add([]byte("STATUS:          0\nUID:             1000\nGID:             100\n\npayload"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mc, err := ParseUnmunge(b)
		if err == nil && (mc.Status < 0 || mc.Status > 255) {
			t.Fatalf("status %d", mc.Status)
		}
	})
}

func FuzzParseRules(f *testing.F) {
	f.Add("10.0.0.0/8=root,192.168.1.7=all:500:600")
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseRules(s)
		if err != nil {
			return
		}
		var parts []string
		for _, r := range rules {
			parts = append(parts, r.String())
		}
		again, err := ParseRules(joinComma(parts))
		if err != nil || len(again) != len(rules) {
			t.Fatalf("%q: re-parsed %v, %v", s, again, err)
		}
		for i := range rules {
			if again[i] != rules[i] {
				t.Fatalf("%q: rule %d re-parsed as %v, was %v", s, i, again[i], rules[i])
			}
		}
	})
}

func joinComma(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	return b.String()
}
