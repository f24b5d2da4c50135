package nfs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Export is one exported directory and the clients allowed to mount it,
// written as a line of /etc/exports:
//
//	/path 10.1.0.0/16(rw,no_root_squash) 192.168.1.7(ro) 127.0.0.1
//
// Path is a directory of the Strata namespace; a client sees it as the
// server's root. After the identity layer's nodemap (trust.go), AUTH_SYS
// from an allowed client is taken as it comes, except uid 0 which
// root_squash (the default) maps to the anonymous identity; all_squash
// maps every user.
type Export struct {
	Path    string
	Clients []ClientRule
}

// ClientRule is the options for one allowed host or network.
type ClientRule struct {
	Net        netip.Prefix
	ReadOnly   bool
	RootSquash bool
	AllSquash  bool
	AnonUid    uint32
	AnonGid    uint32
}

// nobody is the anonymous identity squashed users get by default.
const nobody = 65534

// ParseExport parses one /etc/exports-style line.
func ParseExport(line string) (Export, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return Export{}, fmt.Errorf("%w %q: want PATH CLIENT[(OPTIONS)]...", ErrBadExport, line)
	}
	e := Export{Path: f[0]}
	if !strings.HasPrefix(e.Path, "/") {
		return Export{}, fmt.Errorf("%w %q: the path must be absolute", ErrBadExport, line)
	}
	for _, c := range f[1:] {
		r, err := parseClient(c)
		if err != nil {
			return Export{}, fmt.Errorf("%w %q: %v", ErrBadExport, line, err)
		}
		e.Clients = append(e.Clients, r)
	}
	return e, nil
}

func parseClient(s string) (ClientRule, error) {
	host, opts, _ := strings.Cut(s, "(")
	r := ClientRule{RootSquash: true, AnonUid: nobody, AnonGid: nobody}
	var err error
	if strings.Contains(host, "/") {
		r.Net, err = netip.ParsePrefix(host)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(host)
		if err == nil {
			r.Net = netip.PrefixFrom(a, a.BitLen())
		}
	}
	if err != nil {
		return r, fmt.Errorf("client %q: not an address or network", host)
	}
	r.Net = r.Net.Masked()
	if opts == "" {
		return r, nil
	}
	if !strings.HasSuffix(opts, ")") {
		return r, fmt.Errorf("client %q: options not closed by ')'", s)
	}
	for _, o := range strings.Split(strings.TrimSuffix(opts, ")"), ",") {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "rw":
			r.ReadOnly = false
		case "ro":
			r.ReadOnly = true
		case "root_squash":
			r.RootSquash = true
		case "no_root_squash":
			r.RootSquash = false
		case "all_squash":
			r.AllSquash = true
		case "no_all_squash":
			r.AllSquash = false
		case "anonuid", "anongid":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return r, fmt.Errorf("option %q: want a number", o)
			}
			if k == "anonuid" {
				r.AnonUid = uint32(n)
			} else {
				r.AnonGid = uint32(n)
			}
		case "sync", "async", "no_subtree_check", "subtree_check", "sec=sys", "insecure", "secure":
			// accepted for familiarity; Strata's behaviour does not depend on them
		default:
			return r, fmt.Errorf("unknown option %q", o)
		}
	}
	return r, nil
}

// String formats the export as ParseExport reads it.
func (e Export) String() string {
	var b strings.Builder
	b.WriteString(e.Path)
	for _, r := range e.Clients {
		o := []string{"rw"}
		if r.ReadOnly {
			o[0] = "ro"
		}
		if r.AllSquash {
			o = append(o, "all_squash")
		} else if !r.RootSquash {
			o = append(o, "no_root_squash")
		}
		if r.AnonUid != nobody || r.AnonGid != nobody {
			o = append(o, fmt.Sprintf("anonuid=%d,anongid=%d", r.AnonUid, r.AnonGid))
		}
		fmt.Fprintf(&b, " %s(%s)", r.Net, strings.Join(o, ","))
	}
	return b.String()
}

// match returns the rule of the first export (and client entry) naming
// addr.
func match(exports []Export, addr netip.Addr) (Export, ClientRule, bool) {
	addr = addr.Unmap()
	for _, e := range exports {
		for _, r := range e.Clients {
			if r.Net.Contains(addr) {
				return e, r, true
			}
		}
	}
	return Export{}, ClientRule{}, false
}

// squash maps an AUTH_SYS identity by the rule.
func (r ClientRule) squash(c rpc.Cred) rpc.Cred {
	if r.AllSquash || (r.RootSquash && c.Uid == 0) {
		return rpc.Cred{Uid: r.AnonUid, Gid: r.AnonGid}
	}
	if r.RootSquash && c.Gid == 0 {
		c.Gid = r.AnonGid
	}
	return c
}
