package mds

import (
	"slices"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// maxSymlinks is how many symbolic links a walk follows before ELOOP, as
// Linux's MAXSYMLINKS.
const maxSymlinks = 40

// walk resolves an absolute path from the root. Symbolic links are followed
// in every component but the last, and in the last too when follow is set;
// a relative target resolves from the link's directory.
func (st *state) walk(path string, follow bool) (*inode, error) {
	return st.walkAs(nil, path, follow)
}

// walkAs is walk for caller cr, who needs search permission on every
// directory it passes (none checked when cr is nil).
func (st *state) walkAs(cr *posix.Cred, path string, follow bool) (*inode, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, errf(syscall.EINVAL, "walk %q: path is not absolute", path)
	}
	comps := splitPath(path)
	cur := st.get(rpc.RootIno)
	links := 0
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		if !cur.isDir() {
			return nil, errf(syscall.ENOTDIR, "walk %q: a component before %q is not a directory", path, c)
		}
		if cr != nil {
			if err := posix.Permission(cr, perm(cur), posix.Exec); err != nil {
				return nil, wrapDenied(err, "walk %q: search directory before %q", path, c)
			}
		}
		switch c {
		case ".":
			continue
		case "..":
			cur = st.get(cur.Parent)
			continue
		}
		if len(c) > maxName {
			return nil, errf(syscall.ENAMETOOLONG, "walk %q: component %q... is longer than %d bytes", path, c[:32], maxName)
		}
		ino, ok := cur.Entries[c]
		if !ok {
			return nil, errf(syscall.ENOENT, "walk %q: %q not found", path, c)
		}
		n := st.get(ino)
		last := i == len(comps)-1
		if n.isSymlink() && (!last || follow) {
			if links++; links > maxSymlinks {
				return nil, errf(syscall.ELOOP, "walk %q: more than %d symbolic links", path, maxSymlinks)
			}
			if strings.HasPrefix(n.Target, "/") {
				cur = st.get(rpc.RootIno)
			}
			comps = append(splitPath(n.Target), comps[i+1:]...)
			i = -1
			continue
		}
		cur = n
	}
	return cur, nil
}

// splitPath returns the non-empty components of a slash-separated path.
func splitPath(p string) []string {
	out := make([]string, 0, strings.Count(p, "/")+1)
	for c := range strings.SplitSeq(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// defaultReaddirLimit is the page size of a readdir that asks for none.
const defaultReaddirLimit = 1024

// readdir lists directory ino in name order from the entry after the name
// after, at most limit entries; more reports that entries remain.
func (st *state) readdir(ino uint64, after string, limit uint32) ([]rpc.DirEntry, bool, error) {
	d, err := st.dir(ino)
	if err != nil {
		return nil, false, err
	}
	if limit == 0 {
		limit = defaultReaddirLimit
	}
	names := make([]string, 0, min(len(d.Entries), int(limit)+1))
	for name := range d.Entries {
		if name > after {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	more := len(names) > int(limit)
	if more {
		names = names[:limit]
	}
	out := make([]rpc.DirEntry, len(names))
	for i, name := range names {
		out[i] = rpc.DirEntry{Name: name, Attr: st.get(d.Entries[name]).attr()}
	}
	return out, more, nil
}
