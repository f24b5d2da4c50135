package rpc

import (
	"math/bits"
	"sync"
)

// Pooled buffers for the bodies of data calls, by power-of-two size class
// from streamMin up to MaxBody: a data server reads each write's body into
// one instead of a fresh allocation (which Go zeroes: a 4 MiB call cost a
// 4 MiB clear and an allocation, on every call).
const (
	// streamMin is the smallest body streamed into a pooled buffer (a
	// request) or straight into the caller's buffers (a reply); smaller
	// ones go through fasthttp's own buffers.
	streamMin = 64 << 10
	minClass  = 16 // 1<<minClass == streamMin
	maxClass  = 27 // 1<<maxClass >= MaxBody
)

var bufClasses [maxClass - minClass + 1]sync.Pool

// classOf returns the size class of a buffer of n bytes.
func classOf(n int) int {
	if n <= streamMin {
		return 0
	}
	return bits.Len(uint(n-1)) - minClass
}

// getBuf returns a buffer of length n from the pool.
func getBuf(n int) *[]byte {
	c := classOf(n)
	if p, ok := bufClasses[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<(c+minClass))
	return &b
}

// putBuf returns a buffer of getBuf to the pool.
func putBuf(p *[]byte) {
	c := classOf(cap(*p))
	if cap(*p) != 1<<(c+minClass) {
		return // not one of ours
	}
	bufClasses[c].Put(p)
}
