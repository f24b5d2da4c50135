// Package crc32c computes CRC32C (Castagnoli), the checksum of every
// stored block and of every byte a data call carries (daemon/rpc's
// end-to-end sums, the data servers' block checksums). Its results are
// those of hash/crc32 with the Castagnoli table, bit for bit.
//
// On amd64 CPUs with AVX-512 and VPCLMULQDQ it folds 256 bytes at a time
// with carry-less multiplication (the method of Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ"), several times
// the rate of the SSE4.2 CRC32 instruction that hash/crc32 uses, which
// each byte of a write or a read went through twice; elsewhere it is
// hash/crc32.
//
// It imports only the standard library and golang.org/x/sys/cpu.
package crc32c
