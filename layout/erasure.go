package layout

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/klauspost/reedsolomon"
)

// Codec is the Reed-Solomon code of an rs:K+M scheme: it computes a stripe
// row's M parity shards from its K data shards and rebuilds data shards
// from any K of the K+M. A shard is any byte range taken at the same
// offsets in each of the row's K+M units; the code works byte by byte, so
// a window of a row can be encoded or rebuilt on its own.
//
// The code is part of the on-disk format: it is klauspost/reedsolomon's
// default systematic Vandermonde-derived matrix over GF(2^8), and
// TestCodecGolden pins its parity bytes. Changing the options given to
// reedsolomon.New makes every stored parity unit wrong.
//
// A Codec is immutable and safe for concurrent use.
type Codec struct {
	k, m int
	enc  reedsolomon.Encoder
}

// codecs caches one Codec per (K, M): building the matrices costs far more
// than a small write.
var codecs sync.Map // [2]int -> *Codec

// NewCodec returns the (cached) codec of an rs:K+M scheme after checking K
// and M against the limits.
func NewCodec(s Scheme) (*Codec, error) {
	if s.Kind != KindRS {
		return nil, fmt.Errorf("%w: scheme %s has no erasure code", ErrInvalid, s)
	}
	if s.K < 1 || s.K > MaxRSData {
		return nil, fmt.Errorf("%w: scheme %s: K must be 1 to %d data units", ErrInvalid, s, MaxRSData)
	}
	if s.M < 1 || s.M > MaxRSPar {
		return nil, fmt.Errorf("%w: scheme %s: M must be 1 to %d parity units", ErrInvalid, s, MaxRSPar)
	}
	key := [2]int{s.K, s.M}
	if c, ok := codecs.Load(key); ok {
		return c.(*Codec), nil
	}
	enc, err := reedsolomon.New(s.K, s.M)
	if err != nil {
		return nil, fmt.Errorf("erasure code %s: %w", s, err)
	}
	c, _ := codecs.LoadOrStore(key, &Codec{k: s.K, m: s.M, enc: enc})
	return c.(*Codec), nil
}

// Codec returns the codec of an rs:K+M layout after validating the
// layout's K, M and unit.
func (l Layout) Codec() (*Codec, error) {
	if err := l.Policy().Validate(); err != nil {
		return nil, err
	}
	if l.Unit < MinUnit {
		return nil, fmt.Errorf("%w: layout %s: unit below %s", ErrInvalid, l, FormatSize(MinUnit))
	}
	return NewCodec(l.Scheme)
}

// K is the number of data shards of a row.
func (c *Codec) K() int { return c.k }

// M is the number of parity shards of a row.
func (c *Codec) M() int { return c.m }

// Encode computes the parity shards shards[K:] from the data shards
// shards[:K]. All K+M shards must have the same length; the parity shards'
// bytes are overwritten, the data shards are only read.
func (c *Codec) Encode(shards [][]byte) error {
	if err := c.enc.Encode(shards); err != nil {
		return fmt.Errorf("erasure encode %d+%d: %w", c.k, c.m, err)
	}
	return nil
}

// Reconstruct fills the data shards i < K with want[i] set from any K
// present shards. A present shard has the common length; a missing one has
// length zero, and a wanted missing one must have that length as capacity:
// its memory receives the bytes. Present shards are only read. It fails
// when fewer than K shards are present.
func (c *Codec) Reconstruct(shards [][]byte, want []bool) error {
	if err := c.enc.ReconstructSome(shards, want); err != nil {
		return fmt.Errorf("erasure reconstruct %d+%d: %w", c.k, c.m, err)
	}
	return nil
}

// Rebuild fills p with component comp (a data shard if comp < K, else
// parity shard comp-K) from shards, K+M slots in which at least K present
// shards have len(p) bytes and the others are nil. It is how a lost
// component of an rs file is rebuilt from the same window of K others.
// Present shards are only read; missing data shards are reconstructed
// into fresh memory when a parity component is wanted.
func (c *Codec) Rebuild(shards [][]byte, comp int, p []byte) error {
	k, m, w := c.k, c.m, len(p)
	if len(shards) != k+m || comp < 0 || comp >= k+m {
		return fmt.Errorf("%w: rebuild component %d from %d shards of rs:%d+%d", ErrInvalid, comp, len(shards), k, m)
	}
	work := slices.Clone(shards)
	if comp < k {
		want := make([]bool, k)
		want[comp] = true
		work[comp] = p[:0:w]
		return c.Reconstruct(work, want)
	}
	want := make([]bool, k)
	missing := false
	for i := 0; i < k; i++ {
		if work[i] == nil {
			want[i], work[i], missing = true, make([]byte, 0, w), true
		}
	}
	if missing {
		if err := c.Reconstruct(work, want); err != nil {
			return err
		}
	}
	for j := 0; j < m; j++ {
		if k+j == comp {
			work[k+j] = p
		} else {
			work[k+j] = make([]byte, w)
		}
	}
	return c.Encode(work)
}

// codecGolden is the CRC32C of the parity SelfTest computes: a pin of the
// on-disk format.
const codecGolden = 0x78d24767

// SelfTest encodes a fixed row with rs:4+2, compares its parity with the
// pinned checksum, and rebuilds two lost data shards. A data server runs it
// at start, so a codec that would write unreadable parity never stores a
// byte.
func SelfTest() error {
	c, err := NewCodec(Scheme{Kind: KindRS, K: 4, M: 2})
	if err != nil {
		return err
	}
	const n = 4096 + 13 // not a multiple of any vector width
	shards := make([][]byte, 6)
	for i := range shards {
		shards[i] = make([]byte, n)
	}
	for i := 0; i < 4; i++ {
		for j := range shards[i] {
			shards[i][j] = byte(i*131 + j*7 + j>>8)
		}
	}
	if err := c.Encode(shards); err != nil {
		return err
	}
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	crc.Write(shards[4])
	crc.Write(shards[5])
	if got := crc.Sum32(); got != codecGolden {
		return fmt.Errorf("erasure self-test: parity checksum %#x, want %#x: the codec changed the on-disk format", got, codecGolden)
	}
	want := []bool{true, false, true, false}
	lost := [][]byte{shards[0], shards[2]}
	shards[0], shards[2] = make([]byte, 0, n), make([]byte, 0, n)
	if err := c.Reconstruct(shards, want); err != nil {
		return fmt.Errorf("erasure self-test: %w", err)
	}
	if !bytes.Equal(shards[0], lost[0]) || !bytes.Equal(shards[2], lost[1]) {
		return fmt.Errorf("erasure self-test: rebuilt data differs")
	}
	return nil
}
