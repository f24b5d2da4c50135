package nfs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// A file handle is 24 bytes: a version byte, three reserved zero bytes, a
// 4-byte shard id (0 until the MDS is sharded), the inode number, and the
// first 8 bytes of an HMAC-SHA256 of the first 16 under the server's
// handle key. It names nothing but the inode, so it survives an MDS
// restart and a change of raft leader; the MAC makes a forged or damaged
// handle NFS4ERR_BADHANDLE instead of a probe of arbitrary inode numbers.
// A well-formed handle of a removed inode is NFS4ERR_STALE.
const (
	fhLen     = 24
	fhVersion = 1
	maxFHLen  = 128 // NFS4_FHSIZE
)

type fhCodec struct{ key []byte }

func (c fhCodec) mac(b []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(b)
	return m.Sum(nil)[:8]
}

// encode returns the handle of inode ino.
func (c fhCodec) encode(ino uint64) []byte {
	b := make([]byte, fhLen)
	b[0] = fhVersion
	binary.BigEndian.PutUint64(b[8:], ino)
	copy(b[16:], c.mac(b[:16]))
	return b
}

// decode returns the inode a handle names, or false for a handle this
// server did not make.
func (c fhCodec) decode(b []byte) (uint64, bool) {
	if len(b) != fhLen || b[0] != fhVersion || b[1]|b[2]|b[3] != 0 {
		return 0, false
	}
	if !hmac.Equal(b[16:], c.mac(b[:16])) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[8:]), true
}
