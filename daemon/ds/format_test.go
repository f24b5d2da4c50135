package ds

import (
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	f := format{ID: "ds1", BlockSize: 65536}
	if got := string(f.encode()); got != "strata-ds 1\nid ds1\nblock_size 65536\n" {
		t.Fatalf("encode = %q", got)
	}
	for _, bad := range []string{
		"",
		"strata-ds 1\n",
		"strata-ds 2\nid ds1\nblock_size 65536\n",
		"strata-ds 1\nid ds1\nblock_size 65536",
		"strata-ds 1\nid ds1\nblock_size 65537\n",
		"strata-ds 1\nid ds1\nblock_size +65536\n",
		"strata-ds 1\nid ds1\nid ds1\nblock_size 65536\n",
		"strata-ds 1\nid ds1\nblock_size 65536\ncolor red\n",
		"strata-ds 1\nid \nblock_size 65536\n",
	} {
		if _, err := decodeFormat([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("decode(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func FuzzFormat(f *testing.F) {
	f.Add([]byte("strata-ds 1\nid ds1\nblock_size 65536\n"))
	f.Add([]byte("strata-ds 1\nblock_size 4096\nid node-7\n"))
	f.Add([]byte("strata-ds 1\nid ds1\nblock_size 99999999999999999999\n"))
	f.Add([]byte("strata-ds 1\nid \xff\nblock_size 4096\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeFormat(b)
		if err != nil {
			return
		}
		again, err := decodeFormat(got.encode())
		if err != nil || again != got {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", got, again, err)
		}
	})
}
