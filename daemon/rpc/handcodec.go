package rpc

import (
	"encoding/binary"
	"fmt"
)

// The messages of the busiest calls (MCreateMany) have codecs written by
// hand: the bytes the reflective codec gives them, encoded and decoded
// without reflection. Marshal and Unmarshal use them for a message that is
// a handCoded; TestHandCodec and FuzzHandCodec hold them to the
// reflective codec (the same bytes, the same messages accepted).
type handCoded interface {
	// appendRPC appends the message's encoding to b.
	appendRPC(b []byte) []byte
	// decodeRPC decodes a whole message (a top-level struct: it may end
	// before any of its own fields, not inside a nested one).
	decodeRPC(d *decoder) error
}

var (
	_ handCoded = (*CreateManyReq)(nil)
	_ handCoded = (*CreateManyResp)(nil)
)

// AppendString appends s as the codec encodes a string field (for
// hand-written codecs of other packages).
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBool appends v as the codec encodes a bool field.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// u32 decodes a uint32 field as the reflective codec does.
func (d *decoder) u32(field string) (uint32, error) {
	x, err := d.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	if x >= 1<<32 {
		return 0, fmt.Errorf("%s: %w: %d overflows uint32", field, ErrDecode, x)
	}
	return uint32(x), nil
}

func (d *decoder) u64(field string) (uint64, error) {
	x, err := d.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return x, nil
}

func (d *decoder) i64(field string) (int64, error) {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		return 0, fmt.Errorf("%s: %w: bad varint", field, ErrDecode)
	}
	d.b = d.b[n:]
	return x, nil
}

func (d *decoder) str(field string) (string, error) {
	s, err := d.bytes()
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return string(s), nil
}

func (d *decoder) boolean(field string) (bool, error) {
	if len(d.b) == 0 || d.b[0] > 1 {
		return false, fmt.Errorf("%s: %w: bad bool", field, ErrDecode)
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v, nil
}

// appendCreateReq appends a nested CreateReq.
func appendCreateReq(b []byte, r *CreateReq) []byte {
	b = binary.AppendUvarint(b, r.Parent)
	b = AppendString(b, r.Name)
	b = binary.AppendUvarint(b, uint64(r.Mode))
	b = binary.AppendUvarint(b, uint64(r.Cred.Uid))
	b = binary.AppendUvarint(b, uint64(r.Cred.Gid))
	b = AppendBool(b, r.Exclusive)
	b = AppendString(b, r.Layout)
	return AppendBool(b, r.Inline)
}

// createReq decodes a nested CreateReq: every field must be there.
func (d *decoder) createReq(r *CreateReq) (err error) {
	if r.Parent, err = d.u64("CreateReq.Parent"); err != nil {
		return err
	}
	if r.Name, err = d.str("CreateReq.Name"); err != nil {
		return err
	}
	if r.Mode, err = d.u32("CreateReq.Mode"); err != nil {
		return err
	}
	if r.Cred.Uid, err = d.u32("CreateReq.Cred.Uid"); err != nil {
		return err
	}
	if r.Cred.Gid, err = d.u32("CreateReq.Cred.Gid"); err != nil {
		return err
	}
	if r.Exclusive, err = d.boolean("CreateReq.Exclusive"); err != nil {
		return err
	}
	if r.Layout, err = d.str("CreateReq.Layout"); err != nil {
		return err
	}
	r.Inline, err = d.boolean("CreateReq.Inline")
	return err
}

func (m *CreateManyReq) appendRPC(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(m.Items)))
	for i := range m.Items {
		b = appendCreateReq(b, &m.Items[i])
	}
	return b
}

func (m *CreateManyReq) decodeRPC(d *decoder) error {
	return decodeItems(d, "CreateManyReq.Items", &m.Items, d.createReq)
}

// decodeItems decodes the one field of a top-level message, a slice of
// nested structs, each with dec: as the reflective codec, no input leaves
// the field as it is, and a count of 0 sets it to nil.
func decodeItems[T any](d *decoder, field string, items *[]T, dec func(*T) error) error {
	if len(d.b) == 0 {
		return nil
	}
	n, err := d.count()
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if n == 0 {
		*items = nil
		return nil
	}
	s := make([]T, n)
	for i := range s {
		if err := dec(&s[i]); err != nil {
			return err
		}
	}
	*items = s
	return nil
}

// appendAttr appends a nested Attr.
func appendAttr(b []byte, a *Attr) []byte {
	b = binary.AppendUvarint(b, a.Ino)
	b = binary.AppendUvarint(b, uint64(a.Mode))
	b = binary.AppendUvarint(b, uint64(a.Nlink))
	b = binary.AppendUvarint(b, uint64(a.Uid))
	b = binary.AppendUvarint(b, uint64(a.Gid))
	b = binary.AppendUvarint(b, a.Size)
	b = binary.AppendVarint(b, a.Atime)
	b = binary.AppendVarint(b, a.Mtime)
	b = binary.AppendVarint(b, a.Ctime)
	b = binary.AppendUvarint(b, a.Gen)
	b = binary.AppendUvarint(b, uint64(a.Rdev))
	return AppendBool(b, a.NoXattrs)
}

// attr decodes a nested Attr: every field must be there.
func (d *decoder) attr(a *Attr) (err error) {
	if a.Ino, err = d.u64("Attr.Ino"); err != nil {
		return err
	}
	for _, f := range [...]struct {
		name string
		v    *uint32
	}{{"Attr.Mode", &a.Mode}, {"Attr.Nlink", &a.Nlink}, {"Attr.Uid", &a.Uid}, {"Attr.Gid", &a.Gid}} {
		if *f.v, err = d.u32(f.name); err != nil {
			return err
		}
	}
	if a.Size, err = d.u64("Attr.Size"); err != nil {
		return err
	}
	for _, f := range [...]struct {
		name string
		v    *int64
	}{{"Attr.Atime", &a.Atime}, {"Attr.Mtime", &a.Mtime}, {"Attr.Ctime", &a.Ctime}} {
		if *f.v, err = d.i64(f.name); err != nil {
			return err
		}
	}
	if a.Gen, err = d.u64("Attr.Gen"); err != nil {
		return err
	}
	if a.Rdev, err = d.u32("Attr.Rdev"); err != nil {
		return err
	}
	a.NoXattrs, err = d.boolean("Attr.NoXattrs")
	return err
}

func (m *CreateManyResp) appendRPC(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(m.Items)))
	for i := range m.Items {
		it := &m.Items[i]
		b = appendAttr(b, &it.Attr)
		b = AppendBool(b, it.Created)
		b = binary.AppendUvarint(b, uint64(it.Errno))
		b = AppendString(b, it.Msg)
	}
	return b
}

func (m *CreateManyResp) decodeRPC(d *decoder) error {
	return decodeItems(d, "CreateManyResp.Items", &m.Items, d.createManyItem)
}

// createManyItem decodes a nested CreateManyItem: every field must be
// there.
func (d *decoder) createManyItem(it *CreateManyItem) (err error) {
	if err := d.attr(&it.Attr); err != nil {
		return err
	}
	if it.Created, err = d.boolean("CreateManyItem.Created"); err != nil {
		return err
	}
	if it.Errno, err = d.u32("CreateManyItem.Errno"); err != nil {
		return err
	}
	it.Msg, err = d.str("CreateManyItem.Msg")
	return err
}
