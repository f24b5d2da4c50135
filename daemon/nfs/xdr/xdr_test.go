package xdr

import (
	"bytes"
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	w := NewWriter(nil)
	w.Uint32(7)
	w.Int64(-3)
	w.Bool(true)
	w.Opaque([]byte("abcde"))
	w.String("xy")
	w.Fixed([]byte{1, 2, 3})
	w.Bitmap([]uint32{5, 0, 0})
	r := NewReader(w.Bytes())
	if r.Uint32() != 7 || r.Int64() != -3 || !r.Bool() || string(r.Opaque(5)) != "abcde" ||
		r.String(2) != "xy" || !bytes.Equal(r.Fixed(3), []byte{1, 2, 3}) {
		t.Fatal("round trip differs")
	}
	if bm := r.Bitmap(4); len(bm) != 1 || bm[0] != 5 {
		t.Fatalf("bitmap %v", bm)
	}
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("err %v, %d bytes left", r.Err(), r.Len())
	}
}

func TestBounds(t *testing.T) {
	w := NewWriter(nil)
	w.Uint32(1 << 30) // a declared 1 GiB opaque with nothing behind it
	r := NewReader(w.Bytes())
	if r.Opaque(1<<20) != nil || !errors.Is(r.Err(), ErrTooLong) {
		t.Errorf("1 GiB opaque under a 1 MiB bound: err %v", r.Err())
	}
	r = NewReader(w.Bytes())
	if r.Count(1<<31-1, 4); !errors.Is(r.Err(), ErrShort) {
		t.Errorf("2^30 elements in a 4-byte message: err %v", r.Err())
	}
	r = NewReader([]byte{0, 0, 0, 2})
	if r.Bool(); !errors.Is(r.Err(), ErrBadBool) {
		t.Errorf("bool 2: err %v", r.Err())
	}
	r = NewReader([]byte{0, 0})
	if r.Uint32(); !errors.Is(r.Err(), ErrShort) {
		t.Errorf("2-byte uint32: err %v", r.Err())
	}
}

// FuzzReader decodes arbitrary bytes with every decoder under small
// bounds: no panic, no read past the message, and whatever decodes
// re-encodes to the same bytes.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		w := NewWriter(nil)
		for i := 0; r.Err() == nil && r.Len() > 0 && i < 64; i++ {
			switch i % 5 {
			case 0:
				if v := r.Opaque(64); r.Err() == nil {
					w.Opaque(v)
				}
			case 1:
				if v := r.Uint32(); r.Err() == nil {
					w.Uint32(v)
				}
			case 2:
				if v := r.Bitmap(4); r.Err() == nil {
					w.Uint32(uint32(len(v)))
					for _, x := range v {
						w.Uint32(x)
					}
				}
			case 3:
				if v := r.Uint64(); r.Err() == nil {
					w.Uint64(v)
				}
			case 4:
				if v := r.Bool(); r.Err() == nil {
					w.Bool(v)
				}
			}
		}
		if r.Offset() > len(b) {
			t.Fatalf("read %d bytes of %d", r.Offset(), len(b))
		}
		// padding bytes need not be zero in the input; compare lengths
		if w.Len() > r.Offset() {
			t.Fatalf("re-encoded %d bytes from %d read", w.Len(), r.Offset())
		}
	})
}
