package identity

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Squash is how a nodemap rule maps the identities of one network.
type Squash uint8

// The squash kinds.
const (
	SquashRoot Squash = iota + 1 // uid 0 becomes the rule's uid and gid (root squash)
	SquashAll                    // every uid becomes the rule's uid and gid (all_squash)
)

// Rule maps the callers from one network: "NET=root" or "NET=root:UID:GID"
// squashes root, "NET=all:UID:GID" every uid; NET is a CIDR prefix or one
// address. The uid and gid default to NobodyID.
type Rule struct {
	Net      netip.Prefix
	Squash   Squash
	Uid, Gid uint32
}

// Nodemap is the admin's map of networks: which may present node
// credentials (Trusted; empty: any holder of the cluster secret), and how
// the identities of others are squashed (Rules, first match wins).
type Nodemap struct {
	Trusted []netip.Prefix
	Rules   []Rule
}

// ParsePrefixes parses comma-separated CIDR prefixes or addresses.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := parsePrefix(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: network %q: %v", ErrConfig, s, err)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: network %q: %v", ErrConfig, s, err)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// ParseRules parses comma-separated squash rules (see Rule).
func ParseRules(s string) ([]Rule, error) {
	var out []Rule
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := parseRule(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRule(s string) (Rule, error) {
	netS, how, ok := strings.Cut(s, "=")
	if !ok {
		return Rule{}, fmt.Errorf("%w: squash rule %q: want NET=root, NET=root:UID:GID or NET=all:UID:GID", ErrConfig, s)
	}
	p, err := parsePrefix(netS)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Net: p, Uid: NobodyID, Gid: NobodyID}
	parts := strings.Split(how, ":")
	switch parts[0] {
	case "root":
		r.Squash = SquashRoot
	case "all":
		r.Squash = SquashAll
	default:
		return Rule{}, fmt.Errorf("%w: squash rule %q: %q is not root or all", ErrConfig, s, parts[0])
	}
	switch len(parts) {
	case 1:
	case 3:
		u, err1 := strconv.ParseUint(parts[1], 10, 32)
		g, err2 := strconv.ParseUint(parts[2], 10, 32)
		if err1 != nil || err2 != nil {
			return Rule{}, fmt.Errorf("%w: squash rule %q: uid and gid must be numbers", ErrConfig, s)
		}
		r.Uid, r.Gid = uint32(u), uint32(g)
	default:
		return Rule{}, fmt.Errorf("%w: squash rule %q: want %s or %s:UID:GID", ErrConfig, s, parts[0], parts[0])
	}
	return r, nil
}

// trusted reports whether a node credential may come from addr.
func (m *Nodemap) trusted(addr netip.Addr) bool {
	if len(m.Trusted) == 0 {
		return true
	}
	for _, p := range m.Trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Trusts reports whether addr is on a trusted network (any address when
// none is configured): the NFS front end trusts AUTH_SYS from there as
// the MDS trusts node credentials.
func (m *Nodemap) Trusts(addr netip.Addr) bool { return m.trusted(addr.Unmap()) }

// Map squashes id as the first rule matching addr says, as the MDS does
// for a caller from addr.
func (m *Nodemap) Map(id *Identity, addr netip.Addr) { m.apply(id, addr.Unmap()) }

// apply squashes id as the first rule matching addr says.
func (m *Nodemap) apply(id *Identity, addr netip.Addr) {
	for _, r := range m.Rules {
		if !r.Net.Contains(addr) {
			continue
		}
		if r.Squash == SquashAll || id.Uid == 0 {
			id.Uid, id.Gid, id.Groups, id.Squashed = r.Uid, r.Gid, nil, true
		}
		return
	}
}

// String formats the rules as ParseRules reads them.
func (r Rule) String() string {
	k := "root"
	if r.Squash == SquashAll {
		k = "all"
	}
	return fmt.Sprintf("%s=%s:%d:%d", r.Net, k, r.Uid, r.Gid)
}
