package rpc

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// handSamples are messages with hand-written codecs, of every shape.
func handSamples() []handCoded {
	attr := Attr{Ino: 1 << 40, Mode: TypeFile | 0o644, Nlink: 1, Uid: 4294967295, Gid: 7, Size: 1 << 50,
		Atime: -1, Mtime: 1 << 62, Ctime: 3, Gen: 2, Rdev: 9, NoXattrs: true}
	return []handCoded{
		&CreateManyReq{},
		&CreateManyReq{Items: []CreateReq{}},
		&CreateManyReq{Items: []CreateReq{
			{Parent: RootIno, Name: "a", Mode: 0o644, Exclusive: true},
			{Parent: 1 << 63, Name: "ünicode b", Mode: 0o7777, Cred: Cred{Uid: 1000, Gid: 4294967295}, Layout: "width=2,unit=64K", Inline: true},
			{},
		}},
		&CreateManyResp{},
		&CreateManyResp{Items: []CreateManyItem{
			{Attr: attr, Created: true},
			{Errno: 17, Msg: "exists"},
			{},
		}},
	}
}

// reflectEncode is the reflective codec's encoding of m.
func reflectEncode(m handCoded) []byte {
	v := reflect.ValueOf(m).Elem()
	return planFor(v.Type()).enc(nil, v)
}

// TestHandCodec: the hand-written codecs write the bytes the reflective
// codec writes, and read back what it reads, from whole messages, every
// cut of one and one with a trailing byte.
func TestHandCodec(t *testing.T) {
	for i, m := range handSamples() {
		want := reflectEncode(m)
		if got := Marshal(nil, m); !bytes.Equal(got, want) {
			t.Fatalf("sample %d (%T): Marshal %x, reflective %x", i, m, got, want)
		}
		for cut := 0; cut <= len(want); cut++ {
			checkHandDecode(t, m, want[:cut])
		}
		checkHandDecode(t, m, append(want, 0))
	}
}

// checkHandDecode decodes b into a new message of m's type with both
// codecs: both fail, or both give the same message.
func checkHandDecode(t *testing.T, m handCoded, b []byte) {
	t.Helper()
	typ := reflect.TypeOf(m).Elem()
	want, got := reflect.New(typ).Interface(), reflect.New(typ).Interface()
	d := decoder{b: b}
	werr := unmarshalReflect(&d, want)
	if werr == nil && len(d.b) != 0 {
		werr = errors.New("trailing bytes")
	}
	gerr := Unmarshal(b, got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%T %x: reflective: %v, hand-written: %v", m, b, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T %x: hand-written %+v, reflective %+v", m, b, got, want)
	}
	if gerr != nil && !errors.Is(gerr, ErrDecode) {
		t.Fatalf("%T %x: %v does not wrap ErrDecode", m, b, gerr)
	}
}

// FuzzHandCodec: for any bytes, each hand-written decoder accepts what
// the reflective one accepts and gives the same message, which encodes
// back to the reflective codec's bytes.
func FuzzHandCodec(f *testing.F) {
	samples := handSamples()
	for i, m := range samples {
		f.Add(uint8(i), reflectEncode(m))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		m := samples[int(which)%len(samples)]
		checkHandDecode(t, m, b)
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(handCoded)
		if Unmarshal(b, got) == nil {
			if enc, want := Marshal(nil, got), reflectEncode(got); !bytes.Equal(enc, want) {
				t.Fatalf("%+v: Marshal %x, reflective %x", got, enc, want)
			}
		}
	})
}
