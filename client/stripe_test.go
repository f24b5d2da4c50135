package client

import (
	"bytes"
	"testing"

	"github.com/strata-hpc/strata/layout"
)

// TestChunks checks that chunks cover the buffer exactly once, each chunk
// stays in one column and within the size limit, and the column offsets
// agree with the layout's arithmetic.
func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		width    int
		unit     int64
		off, n   int64
		maxChunk int64
	}{
		{4, 4096, 0, 1 << 20, 64 << 10},
		{3, 8192, 12345, 100000, 8192},
		{1, 4096, 5, 3, 4096},
		{4, 1 << 20, 1<<20 - 7, 3 << 20, 4 << 20},
		{2, 4096, 0, 4096, 1000},
	} {
		l := layout.Layout{Width: tc.width, Unit: tc.unit, Targets: make([]string, tc.width)}
		p := make([]byte, tc.n)
		for i := range p {
			p[i] = byte(i * 7)
		}
		// Rebuild each column's bytes from the chunks, and the file from the columns.
		cols := make([][]byte, tc.width)
		for _, ch := range chunks(l, p, tc.off, tc.maxChunk) {
			if ch.n > tc.maxChunk {
				t.Fatalf("%+v: chunk of %d > max", tc, ch.n)
			}
			col := cols[ch.col]
			if need := ch.colOff + ch.n; int64(len(col)) < need {
				col = append(col, make([]byte, need-int64(len(col)))...)
			}
			got := bytes.Join(ch.pieces, nil)
			if int64(len(got)) != ch.n {
				t.Fatalf("%+v: pieces hold %d, chunk says %d", tc, len(got), ch.n)
			}
			copy(col[ch.colOff:], got)
			cols[ch.col] = col
		}
		for _, e := range l.Extents(tc.off, tc.n) {
			want := p[e.FileOff-tc.off : e.FileOff-tc.off+e.Len]
			if !bytes.Equal(cols[e.Col][e.ColOff:e.ColOff+e.Len], want) {
				t.Fatalf("%+v: extent %+v does not match", tc, e)
			}
		}
	}
}
