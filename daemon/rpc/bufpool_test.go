package rpc

import "testing"

func TestBufPool(t *testing.T) {
	if 1<<maxClass < MaxBody || 1<<(maxClass-1) >= MaxBody {
		t.Fatalf("maxClass %d does not fit MaxBody %d", maxClass, MaxBody)
	}
	for _, n := range []int{1, streamMin - 1, streamMin, streamMin + 1, 4 << 20, 4<<20 + 1, MaxBody} {
		p := getBuf(n)
		if len(*p) != n || cap(*p) < n || cap(*p) > max(2*n, streamMin) {
			t.Errorf("getBuf(%d): len %d cap %d", n, len(*p), cap(*p))
		}
		putBuf(p)
		if q := getBuf(n); cap(*q) < n {
			t.Errorf("getBuf(%d) after a put: cap %d", n, cap(*q))
		}
	}
}
