package oncrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestRecordBound(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<30|lastFragment) // a declared 1 GiB record
	_, err := ReadRecord(bytes.NewReader(hdr[:]), nil, 1<<20)
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("1 GiB record under a 1 MiB bound: %v", err)
	}
	// two fragments whose sum passes the bound
	var b bytes.Buffer
	binary.BigEndian.PutUint32(hdr[:], 600)
	b.Write(hdr[:])
	b.Write(make([]byte, 600))
	binary.BigEndian.PutUint32(hdr[:], 600|lastFragment)
	b.Write(hdr[:])
	b.Write(make([]byte, 600))
	if _, err := ReadRecord(&b, nil, 1000); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("fragments over the bound: %v", err)
	}
}

// FuzzReadRecord reads records from arbitrary bytes: never more than the
// bound, and what one fragment carries comes back whole.
func FuzzReadRecord(f *testing.F) {
	h := RecordHeader(3)
	f.Add(append(h[:], 'a', 'b', 'c'))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			rec, err := ReadRecord(r, nil, 4096)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrRecordTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(rec) > 4096 {
				t.Fatalf("record of %d bytes over the bound", len(rec))
			}
		}
	})
}
