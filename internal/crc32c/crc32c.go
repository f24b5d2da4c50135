package crc32c

import "hash/crc32"

// table is hash/crc32's Castagnoli table: its Update uses the CPU's CRC32
// instruction where there is one.
var table = crc32.MakeTable(crc32.Castagnoli)

// Update returns the CRC32C of p appended to bytes whose CRC32C is crc,
// as crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), p).
func Update(crc uint32, p []byte) uint32 {
	if n := foldable(len(p)); n > 0 {
		crc = ^fold(^crc, p[:n])
		p = p[n:]
	}
	return crc32.Update(crc, table, p)
}

// Checksum returns the CRC32C of p.
func Checksum(p []byte) uint32 { return Update(0, p) }
