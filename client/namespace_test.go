package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// nsModel is the expected namespace: path -> "d" (directory), "f" (file)
// or "l:target" (symlink).
type nsModel map[string]string

func (m nsModel) children(dir string) []string {
	var out []string
	for p := range m {
		if p != "/" && path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
	}
	sort.Strings(out)
	return out
}

func (m nsModel) within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// parentOK0 is the walk of dir's own ancestors.
func parentOK0(m nsModel, dir string) syscall.Errno {
	up := path.Dir(dir)
	if up == "/" {
		return 0
	}
	if e := parentOK0(m, up); e != 0 {
		return e
	}
	switch v := m[up]; {
	case v == "d":
		return 0
	case v == "" || strings.HasPrefix(v, "l:"):
		return syscall.ENOENT
	}
	return syscall.ENOTDIR
}

// apply performs op on the model and returns the errno it expects.
func (m nsModel) apply(op, a, b string) syscall.Errno {
	// parentOK walks the ancestors of p as a kernel would: a missing one
	// (or a symlink: they all dangle) is ENOENT, a non-directory ENOTDIR.
	parentOK := func(p string) syscall.Errno {
		dir := path.Dir(p)
		if dir == "/" {
			return 0
		}
		if e := parentOK0(m, dir); e != 0 {
			return e
		}
		switch v := m[dir]; {
		case v == "d":
			return 0
		case v == "" || strings.HasPrefix(v, "l:"):
			return syscall.ENOENT
		}
		return syscall.ENOTDIR
	}
	switch op {
	case "mkdir", "create", "symlink":
		if e := parentOK(a); e != 0 {
			return e
		}
		if m[a] != "" {
			return syscall.EEXIST
		}
		m[a] = map[string]string{"mkdir": "d", "create": "f", "symlink": "l:" + b}[op]
	case "remove":
		if e := parentOK(a); e != 0 {
			return e
		}
		switch {
		case m[a] == "":
			return syscall.ENOENT
		case m[a] == "d" && len(m.children(a)) > 0:
			return syscall.ENOTEMPTY
		}
		delete(m, a)
	case "rename": // rename(2) resolves both parents before the old name
		if e := parentOK(a); e != 0 {
			return e
		}
		if e := parentOK(b); e != 0 {
			return e
		}
		if m[a] == "" {
			return syscall.ENOENT
		}
		if a == b {
			return 0
		}
		if m[a] == "d" && m.within(b, a) {
			return syscall.EINVAL
		}
		if t := m[b]; t != "" {
			switch {
			case m[a] == "d" && t != "d":
				return syscall.ENOTDIR
			case m[a] != "d" && t == "d":
				return syscall.EISDIR
			case t == "d" && len(m.children(b)) > 0:
				return syscall.ENOTEMPTY
			}
		}
		moved := nsModel{}
		for p, v := range m {
			if m.within(p, a) {
				moved[b+strings.TrimPrefix(p, a)] = v
				delete(m, p)
			}
		}
		for p := range m {
			if m.within(p, b) {
				delete(m, p)
			}
		}
		for p, v := range moved {
			m[p] = v
		}
	}
	return 0
}

// TestNamespaceModel runs random directory operations through the client
// and checks every result and, periodically, the whole tree against a
// model; failed operations must change nothing.
func TestNamespaceModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 12))
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, 2*time.Minute)
	model := nsModel{"/": "d"}
	names := []string{"a", "b", "c", "d"}
	randPath := func() string {
		p := ""
		for i := 0; i < 1+rnd.IntN(3); i++ {
			p += "/" + names[rnd.IntN(len(names))]
		}
		return p
	}
	for step := 0; step < 600; step++ {
		a, b := randPath(), randPath()
		op := []string{"mkdir", "mkdir", "create", "symlink", "remove", "rename", "rename"}[rnd.IntN(7)]
		var err error
		switch op {
		case "mkdir":
			err = c.Mkdir(ctx, a, 0o755)
		case "create":
			var f *client.File
			if f, err = c.OpenFile(ctx, a, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				err = f.Close()
			}
		case "symlink":
			// Targets never resolve, so the model need not follow links.
			b = "/nowhere" + b
			err = c.Symlink(ctx, b, a)
		case "remove":
			err = c.Remove(ctx, a)
		case "rename":
			err = c.Rename(ctx, a, b)
		}
		want := model.apply(op, a, b)
		if os.Getenv("STRATA_TRACE") != "" {
			t.Logf("step %d: %s %s %s -> %v", step, op, a, b, err)
		}
		if got := errnoOf(err); got != want {
			t.Fatalf("step %d: %s %s %s = %v (errno %d), model wants errno %d (%v)", step, op, a, b, err, got, want, want)
		}
		if step%50 == 49 {
			checkTree(t, ctx, c, model, "/")
		}
	}
	checkTree(t, ctx, c, model, "/")
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var n syscall.Errno
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.EEXIST, syscall.ENOTDIR, syscall.EISDIR, syscall.ENOTEMPTY, syscall.EINVAL} {
		if errors.Is(err, e) {
			return e
		}
	}
	return n - 1 // an errno the model never expects
}

func checkTree(t *testing.T, ctx context.Context, c *client.Client, m nsModel, dir string) {
	t.Helper()
	ents, err := c.ReadDir(ctx, dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name)
		p := path.Join(dir, e.Name)
		kind := "f"
		switch {
		case e.Attr.IsDir():
			kind = "d"
		case e.Attr.IsSymlink():
			target, err := c.Readlink(ctx, p)
			if err != nil {
				t.Fatalf("readlink %s: %v", p, err)
			}
			kind = "l:" + target
		}
		if m[p] != kind {
			t.Fatalf("%s is %q, model says %q", p, kind, m[p])
		}
		if kind == "d" {
			checkTree(t, ctx, c, m, p)
		}
	}
	if want := m.children(dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("readdir %s = %v, model %v", dir, got, want)
	}
}
