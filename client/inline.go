package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// Inline files (rpc/inlinemsg.go): a small file's bytes kept by the MDS.
// The File asks for them at every LAYOUTGET (rpc.LayoutGetReq.Inline) and
// gets them, checked against their CRC32C, in its view; reads are served
// from the view, with no data server call. Writes go through to the MDS
// (rpc.MInlineWrite, one raft entry each: durable when it returns, so
// Sync and Close have nothing to commit) and are applied to the view. A
// write or truncate past the threshold moves the file to its data servers
// (the MDS does it); the File then fetches the layout again and goes on as
// with any file.

// inlineView is an inline file's content as a view holds it, immutable.
type inlineView struct {
	data []byte
	max  int64 // the size the file may reach inline
}

// inlineOf returns the inline content of a LAYOUTGET answer, or nil for a
// file whose bytes are on the data servers. Bytes that fail their CRC32C
// are an error, never data.
func inlineOf(r *rpc.LayoutGetResp) (*inlineView, error) {
	in := r.Inline
	if in == nil {
		return nil, nil
	}
	if s := crc32c.Checksum(in.Data); s != in.Sum {
		return nil, rpc.Errorf(syscall.EIO, fmt.Sprintf("inode %d: inline data from the mds fails its checksum (crc32c %08x, sent %08x)", r.Attr.Ino, s, in.Sum))
	}
	return &inlineView{data: in.Data, max: int64(min(in.Max, rpc.MaxInline))}, nil
}

// read copies the bytes at off into p; past the inline bytes it reads
// zeros.
func (in *inlineView) read(p []byte, off int64) {
	n := 0
	if off < int64(len(in.data)) {
		n = copy(p, in.data[off:])
	}
	clear(p[n:])
}

// with returns v with p written at off in its inline bytes.
func (v *view) with(p []byte, off int64) *view {
	old := v.inline.data
	d := make([]byte, max(int64(len(old)), off+int64(len(p))))
	copy(d, old)
	copy(d[off:], p)
	c := *v
	c.inline = &inlineView{data: d, max: v.inline.max}
	return &c
}

// resized returns v with its inline bytes cut or zero-extended to size.
func (v *view) resized(size int64) *view {
	d := make([]byte, size)
	copy(d, v.inline.data)
	c := *v
	c.inline = &inlineView{data: d, max: v.inline.max}
	return &c
}

// writeInline writes p at off to an inline file and reports true, or
// reports false for a file whose bytes are (now) on the data servers: the
// caller writes there, with the view refreshed.
func (f *File) writeInline(p []byte, off int64) (bool, error) {
	v, err := f.current()
	if err != nil || v.inline == nil {
		return false, err
	}
	end := off + int64(len(p))
	if end <= v.inline.max {
		r, err := f.sendInline(v, p, off)
		if errors.Is(err, syscall.EACCES) && time.Now().UnixNano() > v.tok.Expiry-int64(time.Second) {
			// The capability expired: a fresh one, as withView does.
			if err := f.refresh(f.ctx); err != nil {
				return true, err
			}
			if v, err = f.current(); err != nil || v.inline == nil {
				return false, err
			}
			r, err = f.sendInline(v, p, off)
		}
		if err != nil {
			return true, err
		}
		if !r.Spilled {
			f.mu.Lock()
			if f.view.inline != nil {
				f.view = f.view.with(p, off)
			}
			f.size = max(f.size, end)
			f.mu.Unlock()
			return true, nil
		}
	} else if err := f.spill(); err != nil {
		return true, err
	}
	return false, f.refresh(f.ctx)
}

// sendInline sends one inline write with the capability of view v.
func (f *File) sendInline(v *view, p []byte, off int64) (*rpc.InlineWriteResp, error) {
	req := rpc.InlineWriteReq{Ino: f.ino, Off: uint64(off), Data: p, Mtime: time.Now().UnixNano(), Cap: v.tok}
	var r rpc.InlineWriteResp
	if err := f.c.mds(f.ctx, rpc.MInlineWrite, &req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// truncateInline sets the size of an inline file and reports true, or
// reports false for a file whose bytes are (now) on the data servers.
func (f *File) truncateInline(size int64) (bool, error) {
	v, err := f.current()
	if err != nil || v.inline == nil {
		return false, err
	}
	if size > v.inline.max {
		if err := f.spill(); err != nil {
			return true, err
		}
		return false, f.refresh(f.ctx)
	}
	var r rpc.AttrResp
	if err := f.c.mds(f.ctx, rpc.MSetattr, &rpc.SetattrReq{Ino: f.ino, Valid: rpc.SetSize, Size: uint64(size)}, &r); err != nil {
		return true, err
	}
	f.mu.Lock()
	if f.view.inline != nil {
		f.view = f.view.resized(size)
	}
	f.size, f.end = size, min(f.end, size)
	f.mu.Unlock()
	return true, nil
}

// punchInline zeros n bytes at off of an inline file (within its size)
// and reports true, or reports false for a file on the data servers.
func (f *File) punchInline(off, n int64) (bool, error) {
	v, err := f.current()
	if err != nil || v.inline == nil {
		return false, err
	}
	return f.writeInline(make([]byte, n), off)
}

// spill asks the MDS to move the file to its data servers.
func (f *File) spill() error {
	return f.c.mds(f.ctx, rpc.MInlineSpill, &rpc.InoReq{Ino: f.ino}, &rpc.AttrResp{})
}

// WriteWhole makes data the first bytes of the components of the layout
// r grants for writing, every component cut or extended to its share of a
// file of size bytes, and durable on its data server. It is how the MDS
// moves an inline file to its data servers; the caller records the
// layout's new content (the MDS in raft) once it returns.
func (c *Client) WriteWhole(ctx context.Context, r *rpc.LayoutGetResp, data []byte, size int64) error {
	r.Inline = nil
	v, err := newView(r)
	if err != nil {
		return err
	}
	f := &File{c: c, ctx: ctx, name: fmt.Sprintf("inode %d", r.Attr.Ino), flag: os.O_WRONLY, ino: r.Attr.Ino, view: v, dirty: map[int]bool{}}
	o := f.io(v)
	if err := o.truncate(ctx, size); err != nil {
		return f.err("write", err)
	}
	if len(data) > 0 {
		if _, err := o.write(ctx, data, 0); err != nil {
			return f.err("write", err)
		}
	}
	all := make(map[int]bool, len(v.addrs))
	for i := range v.addrs {
		all[i] = true
	}
	if err := o.sync(ctx, all, size); err != nil {
		return f.err("write", err)
	}
	return nil
}
