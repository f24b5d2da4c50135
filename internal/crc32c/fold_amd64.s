#include "textflag.h"

// Folding constants for the bit-reflected Castagnoli polynomial
// 0x1EDC6F41: for a fold over a distance of D bits, the low quadword is
// reflect32(x^(D+32) mod P) << 1 and the high one reflect32(x^(D-32) mod
// P) << 1 (TestConstants derives them). The 64-byte ones are repeated
// in each 128-bit lane of a ZMM register.

// D = 2048: each of four 64-byte accumulators to the next 256-byte round.
DATA k2048<>+0(SB)/8, $0xdcb17aa4
DATA k2048<>+8(SB)/8, $0xb9e02b86
DATA k2048<>+16(SB)/8, $0xdcb17aa4
DATA k2048<>+24(SB)/8, $0xb9e02b86
DATA k2048<>+32(SB)/8, $0xdcb17aa4
DATA k2048<>+40(SB)/8, $0xb9e02b86
DATA k2048<>+48(SB)/8, $0xdcb17aa4
DATA k2048<>+56(SB)/8, $0xb9e02b86
GLOBL k2048<>(SB), RODATA, $64

// D = 512: one 64-byte accumulator onto the next 64 bytes.
DATA k512<>+0(SB)/8, $0x740eef02
DATA k512<>+8(SB)/8, $0x9e4addf8
DATA k512<>+16(SB)/8, $0x740eef02
DATA k512<>+24(SB)/8, $0x9e4addf8
DATA k512<>+32(SB)/8, $0x740eef02
DATA k512<>+40(SB)/8, $0x9e4addf8
DATA k512<>+48(SB)/8, $0x740eef02
DATA k512<>+56(SB)/8, $0x9e4addf8
GLOBL k512<>(SB), RODATA, $64

// D = 128: one 16-byte lane onto the next.
DATA k128<>+0(SB)/8, $0xf20c0dfe
DATA k128<>+8(SB)/8, $0x14cd00bd6
GLOBL k128<>(SB), RODATA, $16

// func foldAVX512(crc uint32, p []byte) uint32
//
// crc is the CRC state before p (not inverted); len(p) is a multiple of
// 64 and at least 256. The state is XORed into the first bytes, the
// bytes are folded in four 64-byte accumulators 256 bytes at a time, the
// accumulators onto each other, the remaining 64-byte blocks onto the
// result, its four 16-byte lanes onto each other, and the last 16 bytes
// (congruent to the whole input) are summed with the CRC32 instruction
// from a zero state.
TEXT ·foldAVX512(SB), NOSPLIT, $0-36
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	MOVL      crc+0(FP), AX
	VMOVD     AX, X10 // zeroes the rest of Z10

	VMOVDQU64 (SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VPXORQ    Z10, Z1, Z1
	ADDQ      $256, SI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JB        fold4

	VMOVDQU64 k2048<>(SB), Z0

loop256:
	VMOVDQU64  (SI), Z11
	VMOVDQU64  64(SI), Z12
	VMOVDQU64  128(SI), Z13
	VMOVDQU64  192(SI), Z14
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPCLMULQDQ $0x11, Z0, Z2, Z6
	VPCLMULQDQ $0x00, Z0, Z2, Z2
	VPCLMULQDQ $0x11, Z0, Z3, Z7
	VPCLMULQDQ $0x00, Z0, Z3, Z3
	VPCLMULQDQ $0x11, Z0, Z4, Z8
	VPCLMULQDQ $0x00, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z11, Z5, Z1
	VPTERNLOGD $0x96, Z12, Z6, Z2
	VPTERNLOGD $0x96, Z13, Z7, Z3
	VPTERNLOGD $0x96, Z14, Z8, Z4
	ADDQ       $256, SI
	SUBQ       $256, CX
	CMPQ       CX, $256
	JAE        loop256

fold4:
	VMOVDQU64  k512<>(SB), Z0
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z2, Z5, Z1
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z3, Z5, Z1
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z4, Z5, Z1

loop64:
	CMPQ       CX, $64
	JB         lanes
	VMOVDQU64  (SI), Z11
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z11, Z5, Z1
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        loop64

lanes:
	VEXTRACTI32X4 $1, Z1, X2
	VEXTRACTI32X4 $2, Z1, X3
	VEXTRACTI32X4 $3, Z1, X4
	VMOVDQU       k128<>(SB), X0
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X2, X1, X1
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X3, X1, X1
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X4, X1, X1
	VMOVQ         X1, AX
	VPEXTRQ       $1, X1, BX
	VZEROUPPER
	XORL          DX, DX
	CRC32Q        AX, DX
	CRC32Q        BX, DX
	MOVL          DX, ret+32(FP)
	RET
