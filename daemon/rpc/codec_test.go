package rpc

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/strata-hpc/strata/internal/capability"
)

// messages lists one value of every message type on the wire; the round
// trip test and the fuzz target cover each.
func messages() []any {
	tok := capability.Token{Ino: 9, Gen: 2, Ops: capability.OpRead, Expiry: -5, Job: "j1", Class: 3, MAC: []byte{1, 2}}
	attr := Attr{Ino: 5, Mode: TypeFile | 0o644, Nlink: 1, Uid: 1000, Gid: 100, Size: 1 << 40, Atime: -1, Mtime: 2, Ctime: 3, Gen: 1}
	return []any{
		&EntryReq{Parent: 1, Name: "a"}, &WalkReq{Path: "/x/y", Follow: true}, &AttrResp{Attr: attr},
		&QuotaReq{Kind: QuotaProject, ID: 7, Bytes: 1 << 30, Inodes: 9}, &QuotaResp{Kind: QuotaUser, ID: 1000, Bytes: 5, Inodes: 2, BytesLimit: 9, InodesLimit: 3},
		&ProjectReq{Ino: 4, Project: 7},
		&InoReq{Ino: 3}, &SetattrReq{Ino: 1, Valid: SetMode | SetSize, Mode: 0o755, Size: 10},
		&CreateReq{Parent: 1, Name: "f", Mode: 0o600, Cred: Cred{Uid: 1, Gid: 2}, Exclusive: true, Layout: "width=2"},
		&CreateResp{Attr: attr, Created: true}, &MkdirReq{Parent: 1, Name: "d", Mode: 0o700},
		&SymlinkReq{Parent: 1, Name: "l", Target: "/t"}, &ReadlinkResp{Target: "t"},
		&LinkReq{Ino: 4, NewParent: 1, NewName: "h"},
		&RenameReq{OldParent: 1, OldName: "a", NewParent: 2, NewName: "b", Flags: RenameExchange},
		&ReaddirReq{Ino: 1, After: "m", Limit: 10},
		&ReaddirResp{Entries: []DirEntry{{Name: "a", Attr: attr}, {Name: "b"}}, More: true},
		&XattrReq{Ino: 1, Name: "user.k", Value: []byte("v"), Flags: XattrCreate}, &XattrResp{Value: []byte{0}},
		&ListXattrResp{Names: []string{"a", "b"}}, &StatFSResp{Capacity: 10, Free: 5, Files: 3, DSUp: 4, DSTotal: 4},
		&LayoutGetReq{Ino: 1, Write: true},
		&LayoutGetResp{Attr: attr, Layout: Layout{Spec: "width=4,unit=1M,scheme=none", Generation: 1, Targets: []string{"ds1"}, Addrs: []string{"127.0.0.1:7201"}}, Cap: tok},
		&LayoutCommitReq{Ino: 1, Gen: 1, End: 100, Mtime: 7},
		&HeartbeatReq{ID: "ds1", Addr: "a", Node: "n", Capacity: 100, Free: 50, Load: 0.5},
		&HeartbeatResp{IntervalMs: 1000},
		&ClusterResp{ID: "m", Role: "leader", Term: 2, DataSvrs: []DSInfo{{ID: "ds1", State: "up", Load: 1.5}}},
		&Empty{}, &Error{Errno: 2, Msg: "no such file", Redirect: "m2:7000", NotLeader: true},
		&ClusterResp{Voters: []MDSInfo{{ID: "a", RaftAddr: "r", RPCAddr: "p", Voter: true}}, LeaderRPC: "p"},
		&VoterReq{ID: "m4", RaftAddr: "m4:7100"},
		&DSReq{Cap: tok, ID: ComponentID{Ino: 1, Gen: 2, Col: 3}, Off: 4, Len: 5, Size: 6},
		&DSResp{Size: 9}, &DSInfoResp{ID: "ds1", Capacity: 1, Free: 1},
		&LockReq{Session: 1, Ino: 2, Lock: Lock{Start: 3, End: LockEOF, Type: 1, Owner: 7, Pid: 9, Flock: true}},
		&LockResp{Lock: Lock{Type: 2}}, &SessionReq{Session: 5}, &SessionResp{TTLMs: 30000},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range messages() {
		b := Marshal(nil, m)
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		if err := Unmarshal(b, got); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%T: round trip = %+v, want %+v", m, got, m)
		}
	}
}

func TestFrame(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 300)
	req := &DSReq{ID: ComponentID{Ino: 1}, Off: 1 << 50}
	b := append(appendFrame(nil, req), data...)
	var got DSReq
	rest, err := splitFrame(b, &got)
	if err != nil || !bytes.Equal(rest, data) || got.Off != req.Off {
		t.Fatalf("splitFrame = %+v %d bytes %v", got, len(rest), err)
	}
	b[0] = 9
	if _, err := splitFrame(b, &got); !errors.Is(err, ErrDecode) {
		t.Fatalf("wrong version accepted: %v", err)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // varint overflow
		{1, 0xff, 0xff, 0xff, 0xff, 0x0f},                                  // huge string length
		{1, 1, 'a', 2},                                                     // bool out of range after name
	} {
		var m ReaddirResp
		if err := Unmarshal(b, &m); !errors.Is(err, ErrDecode) {
			t.Errorf("Unmarshal(%x) = %v, want ErrDecode", b, err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder of every message type:
// no panic, and whatever decodes re-encodes to a value that decodes equal
// (deeply, a NaN float equal to a NaN) and encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for i, m := range messages() {
		f.Add(uint8(i), Marshal(nil, m))
	}
	types := messages()
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		typ := reflect.TypeOf(types[int(which)%len(types)]).Elem()
		v := reflect.New(typ).Interface()
		if err := Unmarshal(b, v); err != nil {
			return
		}
		again := reflect.New(typ).Interface()
		if err := Unmarshal(Marshal(nil, v), again); err != nil {
			t.Fatalf("%s: re-decode: %v", typ, err)
		}
		if !deepEqualNaN(reflect.ValueOf(v), reflect.ValueOf(again)) {
			t.Fatalf("%s: decode(encode(x)) = %+v, want %+v", typ, again, v)
		}
		if a, b := Marshal(nil, v), Marshal(nil, again); !bytes.Equal(a, b) {
			t.Fatalf("%s: encode(decode(encode(x))) = %x, want %x", typ, b, a)
		}
	})
}

// deepEqualNaN is reflect.DeepEqual, except that two NaN floats are equal.
func deepEqualNaN(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		x, y := a.Float(), b.Float()
		return x == y || x != x && y != y
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return deepEqualNaN(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !deepEqualNaN(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !deepEqualNaN(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if w := b.MapIndex(k); !w.IsValid() || !deepEqualNaN(a.MapIndex(k), w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// FuzzFrame feeds arbitrary frames to splitFrame for every message type:
// no panic; what decodes re-frames to a frame that decodes equal, with the
// same data after it.
func FuzzFrame(f *testing.F) {
	types := messages()
	for i, m := range types {
		f.Add(uint8(i), append(appendFrame(nil, m), "data"...))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		typ := reflect.TypeOf(types[int(which)%len(types)]).Elem()
		v := reflect.New(typ).Interface()
		rest, err := splitFrame(b, v)
		if err != nil {
			return
		}
		again := reflect.New(typ).Interface()
		rest2, err := splitFrame(append(appendFrame(nil, v), rest...), again)
		if err != nil || !bytes.Equal(rest, rest2) || !deepEqualNaN(reflect.ValueOf(v), reflect.ValueOf(again)) {
			t.Fatalf("%s: re-framed %+v decodes to %+v, %q (%v)", typ, v, again, rest2, err)
		}
	})
}

// FuzzReply feeds arbitrary replies to the client's decoders: a reply held
// whole (decodeReply, any status) and a streamed one (readReply), into
// caller buffers of fuzzed sizes. No panic; never more data than the
// buffers hold; a whole 2xx reply's data is the bytes after its header.
func FuzzReply(f *testing.F) {
	f.Add(200, appendFrame(nil, &DSResp{Size: 9}), uint16(4), uint16(100))
	f.Add(200, append(appendFrame(nil, &DSResp{Size: 3}), "abcdefgh"...), uint16(3), uint16(2))
	f.Add(404, appendFrame(nil, Errorf(2, "no such file")), uint16(0), uint16(0))
	f.Add(500, []byte("not a frame"), uint16(1), uint16(1))
	f.Fuzz(func(t *testing.T, code int, b []byte, n1, n2 uint16) {
		out := [][]byte{make([]byte, n1), make([]byte, n2)}
		var resp DSResp
		n, err := decodeReply(code, b, &resp, out)
		if n > int(n1)+int(n2) || n < 0 {
			t.Fatalf("decodeReply copied %d bytes into %d", n, int(n1)+int(n2))
		}
		if err == nil && code >= 200 && code <= 299 {
			rest, err := splitFrame(b, &DSResp{})
			if err != nil || n != min(len(rest), int(n1)+int(n2)) || !bytes.Equal(bytes.Join(out, nil)[:n], rest[:n]) {
				t.Fatalf("decodeReply data %d bytes, frame has %d after its header (%v)", n, len(rest), err)
			}
		}
		var r2 DSResp
		m, _ := readReply(bytes.NewReader(b), &r2, [][]byte{make([]byte, n1), make([]byte, n2)}, nil)
		if m > int(n1)+int(n2) || m < 0 {
			t.Fatalf("readReply read %d bytes into %d", m, int(n1)+int(n2))
		}
	})
}

func TestDeepEqualNaN(t *testing.T) {
	nan := math.NaN()
	eq := func(a, b any) bool { return deepEqualNaN(reflect.ValueOf(a), reflect.ValueOf(b)) }
	if !eq(&HeartbeatReq{ID: "a", Load: nan}, &HeartbeatReq{ID: "a", Load: nan}) {
		t.Error("NaN loads compare unequal")
	}
	for _, tc := range [][2]any{
		{&HeartbeatReq{Load: nan}, &HeartbeatReq{Load: 1}},
		{&HeartbeatReq{ID: "a"}, &HeartbeatReq{ID: "b"}},
		{&ReaddirResp{}, &ReaddirResp{Entries: []DirEntry{}}},
		{&ReaddirResp{Entries: []DirEntry{{Name: "x"}}}, &ReaddirResp{Entries: []DirEntry{{Name: "y"}}}},
	} {
		if eq(tc[0], tc[1]) {
			t.Errorf("%+v and %+v compare equal", tc[0], tc[1])
		}
	}
}
