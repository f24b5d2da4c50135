package mds

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// mnode is a node of the in-memory model of the namespace that the
// randomized test checks the server against.
type mnode struct {
	kind   uint32 // rpc.TypeFile, TypeDir, TypeSymlink
	perm   uint32
	uid    uint32
	size   uint64
	target string
	kids   map[string]*mnode
	parent *mnode
	nlink  int
	xattrs map[string]string
	ino    uint64 // the server's inode number
}

func (n *mnode) isDir() bool { return n.kind == rpc.TypeDir }

func newMDir(parent *mnode, perm uint32) *mnode {
	return &mnode{kind: rpc.TypeDir, perm: perm, kids: map[string]*mnode{}, parent: parent, nlink: 2, xattrs: map[string]string{}}
}

// ment is one directory entry of the model.
type ment struct {
	dir  *mnode
	name string
	node *mnode
}

// model is the namespace as POSIX says it should be.
type model struct {
	root *mnode
}

func newModel() *model {
	r := newMDir(nil, 0o755)
	r.parent, r.ino = r, rpc.RootIno
	return &model{root: r}
}

// entries lists every entry in a deterministic order.
func (m *model) entries() []ment {
	var out []ment
	var walk func(d *mnode)
	walk = func(d *mnode) {
		for _, name := range sortedKeys(d.kids) {
			k := d.kids[name]
			out = append(out, ment{d, name, k})
			if k.isDir() {
				walk(k)
			}
		}
	}
	walk(m.root)
	return out
}

func (m *model) dirs() []*mnode {
	out := []*mnode{m.root}
	for _, e := range m.entries() {
		if e.node.isDir() {
			out = append(out, e.node)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// isAnc reports whether a is d or an ancestor of d.
func (m *model) isAnc(a, d *mnode) bool {
	for x := d; ; x = x.parent {
		if x == a {
			return true
		}
		if x == m.root {
			return false
		}
	}
}

// The model's operations return the errno POSIX wants and apply the
// change when it is 0.

func (m *model) create(d *mnode, name string, excl bool, perm uint32) (syscall.Errno, *mnode) {
	if e := d.kids[name]; e != nil {
		switch {
		case excl:
			return syscall.EEXIST, nil
		case e.isDir():
			return syscall.EISDIR, nil
		case e.kind != rpc.TypeFile:
			return syscall.EEXIST, nil
		}
		return 0, e
	}
	n := &mnode{kind: rpc.TypeFile, perm: perm, nlink: 1, xattrs: map[string]string{}}
	d.kids[name] = n
	return 0, n
}

func (m *model) mkdir(d *mnode, name string, perm uint32) (syscall.Errno, *mnode) {
	if d.kids[name] != nil {
		return syscall.EEXIST, nil
	}
	n := newMDir(d, perm)
	d.kids[name] = n
	d.nlink++
	return 0, n
}

func (m *model) symlink(d *mnode, name, target string) (syscall.Errno, *mnode) {
	if d.kids[name] != nil {
		return syscall.EEXIST, nil
	}
	n := &mnode{kind: rpc.TypeSymlink, perm: 0o777, nlink: 1, size: uint64(len(target)), target: target, xattrs: map[string]string{}}
	d.kids[name] = n
	return 0, n
}

func (m *model) link(src, d *mnode, name string) syscall.Errno {
	switch {
	case d.kids[name] != nil:
		return syscall.EEXIST
	case src.isDir():
		return syscall.EPERM
	}
	d.kids[name] = src
	src.nlink++
	return 0
}

func (m *model) unlink(d *mnode, name string) syscall.Errno {
	e := d.kids[name]
	switch {
	case e == nil:
		return syscall.ENOENT
	case e.isDir():
		return syscall.EISDIR
	}
	delete(d.kids, name)
	e.nlink--
	return 0
}

func (m *model) rmdir(d *mnode, name string) syscall.Errno {
	e := d.kids[name]
	switch {
	case e == nil:
		return syscall.ENOENT
	case !e.isDir():
		return syscall.ENOTDIR
	case len(e.kids) > 0:
		return syscall.ENOTEMPTY
	}
	delete(d.kids, name)
	d.nlink--
	return 0
}

func (m *model) rename(od *mnode, on string, nd *mnode, nn string, flags uint32) syscall.Errno {
	src, dst := od.kids[on], nd.kids[nn]
	if src == nil {
		return syscall.ENOENT
	}
	if flags == rpc.RenameExchange {
		switch {
		case dst == nil:
			return syscall.ENOENT
		case dst == src:
			return 0
		case (src.isDir() && m.isAnc(src, nd)) || (dst.isDir() && m.isAnc(dst, od)):
			return syscall.EINVAL
		}
		od.kids[on], nd.kids[nn] = dst, src
		if od != nd {
			if src.isDir() {
				src.parent = nd
				od.nlink--
				nd.nlink++
			}
			if dst.isDir() {
				dst.parent = od
				nd.nlink--
				od.nlink++
			}
		}
		return 0
	}
	if flags == rpc.RenameNoReplace && dst != nil {
		return syscall.EEXIST
	}
	if dst == src {
		return 0
	}
	if src.isDir() {
		switch {
		case m.isAnc(src, nd):
			return syscall.EINVAL
		case dst != nil && !dst.isDir():
			return syscall.ENOTDIR
		case dst != nil && len(dst.kids) > 0:
			return syscall.ENOTEMPTY
		}
	} else if dst != nil && dst.isDir() {
		return syscall.EISDIR
	}
	if dst != nil {
		delete(nd.kids, nn)
		if dst.isDir() {
			nd.nlink--
		} else {
			dst.nlink--
		}
	}
	delete(od.kids, on)
	nd.kids[nn] = src
	if src.isDir() && od != nd {
		src.parent = nd
		od.nlink--
		nd.nlink++
	}
	return 0
}

func (m *model) setattr(n *mnode, r *rpc.SetattrReq) syscall.Errno {
	if r.Valid&rpc.SetSize != 0 {
		switch n.kind {
		case rpc.TypeDir:
			return syscall.EISDIR
		case rpc.TypeSymlink:
			return syscall.EINVAL
		}
	}
	if r.Valid&rpc.SetMode != 0 {
		n.perm = r.Mode & 0o7777
	}
	if r.Valid&rpc.SetUid != 0 {
		n.uid = r.Uid
	}
	if r.Valid&rpc.SetSize != 0 {
		n.size = r.Size
	}
	return 0
}

func (m *model) setxattr(n *mnode, name, value string, flags uint32) syscall.Errno {
	_, has := n.xattrs[name]
	switch {
	case n.kind == rpc.TypeSymlink && strings.HasPrefix(name, "user."):
		return syscall.EPERM
	case flags&rpc.XattrCreate != 0 && has:
		return syscall.EEXIST
	case flags&rpc.XattrReplace != 0 && !has:
		return syscall.ENODATA
	}
	n.xattrs[name] = value
	return 0
}

func (m *model) removexattr(n *mnode, name string) syscall.Errno {
	if n.kind == rpc.TypeSymlink && strings.HasPrefix(name, "user.") {
		return syscall.EPERM // as Linux: user. xattrs are not for links
	}
	if _, ok := n.xattrs[name]; !ok {
		return syscall.ENODATA
	}
	delete(n.xattrs, name)
	return 0
}

// harness drives the model and the server with the same random operations.
type harness struct {
	t *testing.T
	m *tmds
	o *model
	r *rand.Rand
}

var modelNames = []string{"a", "b", "c", "d", "e"}

// step performs one random operation on both and compares the errno.
func (h *harness) step(i int) {
	r, o := h.r, h.o
	dirs, ents := o.dirs(), o.entries()
	d := dirs[r.IntN(len(dirs))]
	name := modelNames[r.IntN(len(modelNames))]
	node := o.root
	if len(ents) > 0 && r.IntN(8) != 0 {
		node = ents[r.IntN(len(ents))].node
	}
	var want syscall.Errno
	var desc string
	var err error
	var got *rpc.Attr // attributes returned for a created node
	var made *mnode
	switch op := r.IntN(14); op {
	case 0, 1, 2:
		excl := r.IntN(2) == 0
		perm := uint32(0o600 + r.IntN(0o100))
		desc = fmt.Sprintf("create %d/%s excl=%v", d.ino, name, excl)
		before := d.kids[name]
		want, made = o.create(d, name, excl, perm)
		var resp *rpc.CreateResp
		resp, err = call[rpc.CreateResp](h.m, rpc.MCreate, &rpc.CreateReq{Parent: d.ino, Name: name, Mode: perm, Exclusive: excl})
		if err == nil {
			got = &resp.Attr
			if resp.Created != (before == nil) {
				h.t.Fatalf("step %d %s: created = %v, want %v", i, desc, resp.Created, before == nil)
			}
		}
	case 3, 4:
		desc = fmt.Sprintf("mkdir %d/%s", d.ino, name)
		want, made = o.mkdir(d, name, 0o755)
		var resp *rpc.AttrResp
		resp, err = call[rpc.AttrResp](h.m, rpc.MMkdir, &rpc.MkdirReq{Parent: d.ino, Name: name, Mode: 0o755})
		if err == nil {
			got = &resp.Attr
		}
	case 5:
		target := modelNames[r.IntN(len(modelNames))] + "/x"
		desc = fmt.Sprintf("symlink %d/%s -> %s", d.ino, name, target)
		want, made = o.symlink(d, name, target)
		var resp *rpc.AttrResp
		resp, err = call[rpc.AttrResp](h.m, rpc.MSymlink, &rpc.SymlinkReq{Parent: d.ino, Name: name, Target: target})
		if err == nil {
			got = &resp.Attr
		}
	case 6:
		desc = fmt.Sprintf("link %d as %d/%s", node.ino, d.ino, name)
		want = o.link(node, d, name)
		_, err = call[rpc.AttrResp](h.m, rpc.MLink, &rpc.LinkReq{Ino: node.ino, NewParent: d.ino, NewName: name})
	case 7, 8:
		desc = fmt.Sprintf("unlink %d/%s", d.ino, name)
		if len(ents) > 0 && r.IntN(2) == 0 {
			e := ents[r.IntN(len(ents))]
			d, name = e.dir, e.name
			desc = fmt.Sprintf("unlink %d/%s", d.ino, name)
		}
		want = o.unlink(d, name)
		_, err = call[rpc.Empty](h.m, rpc.MUnlink, &rpc.EntryReq{Parent: d.ino, Name: name})
	case 9:
		desc = fmt.Sprintf("rmdir %d/%s", d.ino, name)
		want = o.rmdir(d, name)
		_, err = call[rpc.Empty](h.m, rpc.MRmdir, &rpc.EntryReq{Parent: d.ino, Name: name})
	case 10, 11:
		od, on := d, name
		if len(ents) > 0 && r.IntN(4) != 0 {
			e := ents[r.IntN(len(ents))]
			od, on = e.dir, e.name
		}
		nd, nn := dirs[r.IntN(len(dirs))], modelNames[r.IntN(len(modelNames))]
		flags := []uint32{0, 0, rpc.RenameNoReplace, rpc.RenameExchange}[r.IntN(4)]
		desc = fmt.Sprintf("rename %d/%s -> %d/%s flags %d", od.ino, on, nd.ino, nn, flags)
		want = o.rename(od, on, nd, nn, flags)
		_, err = call[rpc.Empty](h.m, rpc.MRename, &rpc.RenameReq{OldParent: od.ino, OldName: on, NewParent: nd.ino, NewName: nn, Flags: flags})
	case 12:
		req := &rpc.SetattrReq{Ino: node.ino}
		switch r.IntN(3) {
		case 0:
			req.Valid, req.Mode = rpc.SetMode, uint32(r.IntN(0o1000))
		case 1:
			req.Valid, req.Uid = rpc.SetUid, uint32(r.IntN(3))
		default:
			req.Valid, req.Size = rpc.SetSize, uint64(r.IntN(1<<20))
		}
		desc = fmt.Sprintf("setattr %+v", *req)
		want = o.setattr(node, req)
		_, err = call[rpc.AttrResp](h.m, rpc.MSetattr, req)
	default:
		xname := []string{"user.a", "user.b", "trusted.c"}[r.IntN(3)]
		if r.IntN(3) == 0 {
			desc = fmt.Sprintf("removexattr %d %s", node.ino, xname)
			want = o.removexattr(node, xname)
			_, err = call[rpc.Empty](h.m, rpc.MRemoveXattr, &rpc.XattrReq{Ino: node.ino, Name: xname})
		} else {
			flags := uint32(r.IntN(3))
			val := fmt.Sprintf("v%d", i)
			desc = fmt.Sprintf("setxattr %d %s flags %d", node.ino, xname, flags)
			want = o.setxattr(node, xname, val, flags)
			_, err = call[rpc.Empty](h.m, rpc.MSetXattr, &rpc.XattrReq{Ino: node.ino, Name: xname, Value: []byte(val), Flags: flags})
		}
	}
	if g := errnoOf(err); g != want {
		h.t.Fatalf("step %d %s: errno %v (%v), model wants %v", i, desc, g, err, want)
	}
	if made != nil && got != nil {
		if made.ino != 0 && made.ino != got.Ino {
			h.t.Fatalf("step %d %s: inode %d, model has %d", i, desc, got.Ino, made.ino)
		}
		made.ino = got.Ino
	}
}

// compare walks the server's namespace and checks it equals the model:
// names, types, permissions, owners, link counts, sizes, symlink targets,
// xattrs, which names are links of one inode, and the inode count.
func (h *harness) compare() {
	h.t.Helper()
	inos := map[*mnode]uint64{}
	var walk func(path string, d *mnode)
	walk = func(path string, d *mnode) {
		var names []string
		var attrs []rpc.Attr
		after := ""
		for {
			page := must[rpc.ReaddirResp](h.m, rpc.MReaddir, &rpc.ReaddirReq{Ino: d.ino, After: after, Limit: 3})
			for _, e := range page.Entries {
				names = append(names, e.Name)
				attrs = append(attrs, e.Attr)
				after = e.Name
			}
			if !page.More {
				break
			}
		}
		if want := sortedKeys(d.kids); !slices.Equal(names, want) {
			h.t.Fatalf("%s: entries %v, model has %v", path, names, want)
		}
		for i, name := range names {
			p, a, k := path+"/"+name, attrs[i], d.kids[name]
			if prev, ok := inos[k]; ok && prev != a.Ino {
				h.t.Fatalf("%s: inode %d, but the model's other link of it is inode %d", p, a.Ino, prev)
			}
			inos[k] = a.Ino
			if a.Mode&rpc.TypeMask != k.kind || a.Mode&0o7777 != k.perm || a.Uid != k.uid || int(a.Nlink) != k.nlink || a.Size != k.size {
				h.t.Fatalf("%s: attr %+v, model %+v", p, a, *k)
			}
			if k.kind == rpc.TypeSymlink {
				if rl := must[rpc.ReadlinkResp](h.m, rpc.MReadlink, &rpc.InoReq{Ino: a.Ino}); rl.Target != k.target {
					h.t.Fatalf("%s: target %q, model %q", p, rl.Target, k.target)
				}
			}
			lx := must[rpc.ListXattrResp](h.m, rpc.MListXattr, &rpc.XattrReq{Ino: a.Ino})
			xnames := slices.DeleteFunc(lx.Names, func(n string) bool { return n == rpc.LayoutXattr })
			if want := sortedKeys(k.xattrs); !slices.Equal(xnames, want) {
				h.t.Fatalf("%s: xattrs %v, model %v", p, xnames, want)
			}
			for _, xn := range xnames {
				if v := must[rpc.XattrResp](h.m, rpc.MGetXattr, &rpc.XattrReq{Ino: a.Ino, Name: xn}); string(v.Value) != k.xattrs[xn] {
					h.t.Fatalf("%s: xattr %s = %q, model %q", p, xn, v.Value, k.xattrs[xn])
				}
			}
			if k.isDir() {
				walk(p, k)
			}
		}
	}
	walk("", h.o.root)
	root := must[rpc.AttrResp](h.m, rpc.MGetattr, &rpc.InoReq{Ino: rpc.RootIno})
	if int(root.Attr.Nlink) != h.o.root.nlink {
		h.t.Fatalf("root nlink %d, model %d", root.Attr.Nlink, h.o.root.nlink)
	}
	fs := must[rpc.StatFSResp](h.m, rpc.MStatFS, &rpc.Empty{})
	if fs.Files != uint64(len(inos)+1) {
		h.t.Fatalf("statfs files %d, model has %d inodes", fs.Files, len(inos)+1)
	}
}

func TestNamespaceRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	h := &harness{t: t, m: m, o: newModel(), r: rand.New(rand.NewPCG(seed, 1))}
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for i := 0; i < steps; i++ {
		h.step(i)
		if i%100 == 99 {
			h.compare()
		}
	}
	h.compare()
}
