package nfsguest

// Pattern returns n deterministic pseudo-random bytes for seed, the same
// in the guest and in the host's test, so either side can check what the
// other wrote.
func Pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
	return b
}
