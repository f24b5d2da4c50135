package mds

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// createSamples are creates of every shape: no layout, striped, mirror
// and rs layouts, large and negative numbers, an empty name.
func createSamples() []createCmd {
	return []createCmd{
		{},
		{Parent: rpc.RootIno, Name: "a", Mode: 0o644, Exclusive: true, Now: 1},
		{Parent: 1 << 40, Name: "file with spaces and ünicode", Mode: 0o7777, Uid: 1 << 31, Gid: 4294967295, Now: -5, Inline: true,
			Layout: layout.Layout{Width: 4, Unit: 1 << 20, Generation: 3, Targets: []string{"ds0", "ds1", "ds2", "ds3"}}},
		{Parent: 7, Name: "m", Layout: layout.Layout{Width: 2, Unit: 65536, Scheme: layout.Scheme{Kind: layout.KindMirror, N: 2}, Targets: []string{"a", "b", "c", "d"}}},
		{Parent: 7, Name: "r", Layout: layout.Layout{Width: 4, Unit: 65536, Scheme: layout.Scheme{Kind: layout.KindRS, K: 4, M: 2}, Targets: []string{"a", "b", "c", "d", "e", ""}}, Now: 1 << 62},
		{Parent: 7, Name: "neg", Layout: layout.Layout{Width: -1, Unit: -1, Scheme: layout.Scheme{N: -3, K: -1 << 40, M: 1}, Targets: []string{}}},
		{Parent: math.MaxUint64, Name: "max", Mode: math.MaxUint32, Uid: math.MaxUint32, Gid: math.MaxUint32, Exclusive: true, Now: math.MinInt64, Inline: true,
			Layout: layout.Layout{Width: math.MinInt, Unit: math.MaxInt64, Scheme: layout.Scheme{Kind: math.MaxUint8, N: math.MaxInt, K: math.MinInt, M: math.MinInt},
				Generation: math.MaxUint64, Targets: []string{"x"}}},
	}
}

// TestCreateCodec: the hand-written createCmd codec writes the bytes
// rpc.Marshal writes, and reads back what rpc.Unmarshal reads, from whole
// commands and from every cut of one (an older binary's command ends
// early; a cut inside the layout must fail in both).
func TestCreateCodec(t *testing.T) {
	names := targetNames{}
	for i, c := range createSamples() {
		want := rpc.Marshal(nil, &c)
		got := appendCreate(nil, &c)
		if !bytes.Equal(got, want) {
			t.Fatalf("sample %d: appendCreate %x, rpc.Marshal %x", i, got, want)
		}
		if e := encodeCommand(cmdCreate, &c); !bytes.Equal(e[1:], want) || cmdType(e[0]) != cmdCreate {
			t.Fatalf("sample %d: encodeCommand %x", i, e)
		}
		if len(want) > createSize(&c) {
			t.Fatalf("sample %d: %d bytes, createSize %d", i, len(want), createSize(&c))
		}
		for cut := 0; cut <= len(want); cut++ {
			checkCreateDecode(t, want[:cut], names)
		}
		checkCreateDecode(t, append(want, 0), names) // trailing byte
	}
	// Ids are shared: two decodes of one layout hold the same strings.
	b := rpc.Marshal(nil, &createSamples()[2])
	var x, y createCmd
	if err := decodeCreate(b, &x, names); err != nil {
		t.Fatal(err)
	}
	if err := decodeCreate(b, &y, names); err != nil {
		t.Fatal(err)
	}
	if x.Layout.Targets[0] != "ds0" || unsafe.StringData(x.Layout.Targets[0]) != unsafe.StringData(y.Layout.Targets[0]) {
		t.Errorf("targets %q and %q: not shared", x.Layout.Targets, y.Layout.Targets)
	}
}

// checkCreateDecode decodes b with both codecs: both fail, or both give
// the same command.
func checkCreateDecode(t *testing.T, b []byte, names targetNames) {
	t.Helper()
	var want, got createCmd
	werr := rpc.Unmarshal(b, &want)
	gerr := decodeCreate(b, &got, names)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%x: rpc.Unmarshal: %v, decodeCreate: %v", b, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: decodeCreate %+v, rpc.Unmarshal %+v", b, got, want)
	}
}

// FuzzCreateCodec: for any bytes, the hand-written decoder accepts what
// rpc.Unmarshal accepts and gives the same command, which encodes back to
// the bytes rpc.Marshal gives it. A replica whose decoder accepted a
// command another refused would diverge (Apply panics on the refusal).
func FuzzCreateCodec(f *testing.F) {
	for _, c := range createSamples() {
		f.Add(rpc.Marshal(nil, &c))
	}
	names := targetNames{}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCreateDecode(t, b, names)
		var c createCmd
		if decodeCreate(b, &c, names) == nil {
			got, want := appendCreate(nil, &c), rpc.Marshal(nil, &c)
			if !bytes.Equal(got, want) {
				t.Fatalf("%+v: appendCreate %x, rpc.Marshal %x", c, got, want)
			}
			if len(got) > createSize(&c) {
				t.Fatalf("%+v: %d bytes, createSize %d", c, len(got), createSize(&c))
			}
		}
	})
}
