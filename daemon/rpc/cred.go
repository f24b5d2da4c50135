package rpc

import (
	"context"
	"strconv"
	"strings"
)

// credHeader carries the Cred a call acts for (WithCred) from a client to
// a server, as "uid gid". It is a claim, not a proof: authentication
// (MUNGE, node credentials) is what makes a server believe it.
const credHeader = "Strata-Cred"

type credKey struct{}

// WithCred returns ctx in which calls act for c: the client sends it with
// every call, and the server's handlers find it with CredFrom.
func WithCred(ctx context.Context, c Cred) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// CredFrom returns the Cred ctx acts for, if any.
func CredFrom(ctx context.Context) (Cred, bool) {
	c, ok := ctx.Value(credKey{}).(Cred)
	return c, ok
}

func formatCred(c Cred) string {
	return strconv.FormatUint(uint64(c.Uid), 10) + " " + strconv.FormatUint(uint64(c.Gid), 10)
}

// parseCred parses a credHeader value; ok is false for a malformed one.
func parseCred(v string) (Cred, bool) {
	u, g, ok := strings.Cut(v, " ")
	if !ok {
		return Cred{}, false
	}
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		return Cred{}, false
	}
	return Cred{Uid: uint32(uid), Gid: uint32(gid)}, true
}
