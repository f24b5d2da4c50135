package crc32c

import "golang.org/x/sys/cpu"

// hasFold says the CPU (and the OS, which must save the AVX-512 state)
// runs foldAVX512.
var hasFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ &&
	cpu.X86.HasSSE42 && cpu.X86.HasAVX

// minFold is the shortest input foldAVX512 takes: one round of its four
// 64-byte accumulators. Shorter inputs go to hash/crc32.
const minFold = 256

// foldable returns how many leading bytes of an n-byte input fold takes:
// a multiple of 64, at least minFold, or 0.
func foldable(n int) int {
	if !hasFold || n < minFold {
		return 0
	}
	return n &^ 63
}

// fold returns the CRC32C state (not inverted) after p, starting from
// state crc; len(p) is a multiple of 64 and at least minFold.
func fold(crc uint32, p []byte) uint32 { return foldAVX512(crc, p) }

//go:noescape
func foldAVX512(crc uint32, p []byte) uint32
