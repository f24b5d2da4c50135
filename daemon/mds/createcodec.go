package mds

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// createCmd, the most frequent command, has a codec written by hand: the
// bytes rpc.Marshal gives it, encoded and decoded without reflection, and
// decoded with its data server ids shared with earlier commands' (a
// decoded create allocates its name and its Targets slice, not a string
// per column). TestCreateCodec and FuzzCreateCodec hold it to rpc.Marshal
// and rpc.Unmarshal: the same bytes, and the same commands accepted.

// appendCreate appends the rpc.Marshal encoding of c to b.
func appendCreate(b []byte, c *createCmd) []byte {
	b = binary.AppendUvarint(b, c.Parent)
	b = rpc.AppendString(b, c.Name)
	b = binary.AppendUvarint(b, uint64(c.Mode))
	b = binary.AppendUvarint(b, uint64(c.Uid))
	b = binary.AppendUvarint(b, uint64(c.Gid))
	b = rpc.AppendBool(b, c.Exclusive)
	l := &c.Layout
	b = binary.AppendVarint(b, int64(l.Width))
	b = binary.AppendVarint(b, l.Unit)
	b = binary.AppendUvarint(b, uint64(l.Scheme.Kind))
	b = binary.AppendVarint(b, int64(l.Scheme.N))
	b = binary.AppendVarint(b, int64(l.Scheme.K))
	b = binary.AppendVarint(b, int64(l.Scheme.M))
	b = binary.AppendUvarint(b, l.Generation)
	b = binary.AppendUvarint(b, uint64(len(l.Targets)))
	for _, t := range l.Targets {
		b = rpc.AppendString(b, t)
	}
	b = binary.AppendVarint(b, c.Now)
	return rpc.AppendBool(b, c.Inline)
}

// createSize is at least the length of c's encoding, for allocating it
// once: every number at its longest varint, 13 of them, and each string's
// length and bytes.
func createSize(c *createCmd) int {
	n := 13*binary.MaxVarintLen64 + 2 + binary.MaxVarintLen64 + len(c.Name)
	for _, t := range c.Layout.Targets {
		n += binary.MaxVarintLen64 + len(t)
	}
	return n
}

// targetNames shares the strings of data server ids between decoded
// commands. It is used by one goroutine at a time (raft's FSM goroutine)
// and holds at most maxTargetNames ids: past that, ids are copied as
// rpc.Unmarshal copies them.
type targetNames map[string]string

const maxTargetNames = 4096

// name returns b as a string, shared with earlier calls when it can be.
func (tn targetNames) name(b []byte) string {
	if s, ok := tn[string(b)]; ok {
		return s
	}
	s := string(b)
	if tn != nil && len(tn) < maxTargetNames {
		tn[s] = s
	}
	return s
}

// createDecoder reads a createCmd's payload as rpc.Unmarshal reads it:
// the same bytes accepted, the same command out. A payload may end
// before any top-level field (a command of an older binary: the trailing
// fields stay zero); within the layout it may not.
type createDecoder struct {
	b     []byte
	names targetNames
}

func (d *createDecoder) fail(field, what string) error {
	return fmt.Errorf("%w: createCmd.%s: %s", rpc.ErrDecode, field, what)
}

func (d *createDecoder) uvarint(field string, bits int) (uint64, error) {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, d.fail(field, "bad varint")
	}
	if bits < 64 && x >= 1<<bits {
		return 0, d.fail(field, strconv.FormatUint(x, 10)+" overflows")
	}
	d.b = d.b[n:]
	return x, nil
}

func (d *createDecoder) varint(field string, bits int) (int64, error) {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		return 0, d.fail(field, "bad varint")
	}
	if bits < 64 && (x < -(1<<(bits-1)) || x >= 1<<(bits-1)) {
		return 0, d.fail(field, strconv.FormatInt(x, 10)+" overflows")
	}
	d.b = d.b[n:]
	return x, nil
}

func (d *createDecoder) bytes(field string) ([]byte, error) {
	n, err := d.uvarint(field, 64)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, d.fail(field, "length exceeds the remaining bytes")
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s, nil
}

func (d *createDecoder) bool(field string) (bool, error) {
	if len(d.b) == 0 || d.b[0] > 1 {
		return false, d.fail(field, "bad bool")
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v, nil
}

// intBits is the size of int, as rpc.Unmarshal checks it.
const intBits = strconv.IntSize

// decodeCreate decodes b, a createCmd's payload, into c (zero on entry).
func decodeCreate(b []byte, c *createCmd, names targetNames) error {
	d := createDecoder{b: b, names: names}
	if err := d.top(c); err != nil {
		return err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", rpc.ErrDecode, len(d.b))
	}
	return nil
}

// top decodes the top-level fields in order, stopping without an error
// where the input ends before one.
func (d *createDecoder) top(c *createCmd) (err error) {
	if len(d.b) == 0 {
		return nil
	}
	if c.Parent, err = d.uvarint("Parent", 64); err != nil || len(d.b) == 0 {
		return err
	}
	name, err := d.bytes("Name")
	if err != nil {
		return err
	}
	c.Name = string(name)
	for _, f := range [...]struct {
		name string
		v    *uint32
	}{{"Mode", &c.Mode}, {"Uid", &c.Uid}, {"Gid", &c.Gid}} {
		if len(d.b) == 0 {
			return nil
		}
		x, err := d.uvarint(f.name, 32)
		if err != nil {
			return err
		}
		*f.v = uint32(x)
	}
	if len(d.b) == 0 {
		return nil
	}
	if c.Exclusive, err = d.bool("Exclusive"); err != nil || len(d.b) == 0 {
		return err
	}
	if err := d.layout(&c.Layout); err != nil || len(d.b) == 0 {
		return err
	}
	if c.Now, err = d.varint("Now", 64); err != nil || len(d.b) == 0 {
		return err
	}
	c.Inline, err = d.bool("Inline")
	return err
}

// layout decodes a nested layout.Layout: every field must be there.
func (d *createDecoder) layout(l *layout.Layout) error {
	w, err := d.varint("Layout.Width", intBits)
	if err != nil {
		return err
	}
	l.Width = int(w)
	if l.Unit, err = d.varint("Layout.Unit", 64); err != nil {
		return err
	}
	kind, err := d.uvarint("Layout.Scheme.Kind", 8)
	if err != nil {
		return err
	}
	l.Scheme.Kind = layout.Kind(kind)
	for _, f := range [...]struct {
		name string
		v    *int
	}{{"Layout.Scheme.N", &l.Scheme.N}, {"Layout.Scheme.K", &l.Scheme.K}, {"Layout.Scheme.M", &l.Scheme.M}} {
		x, err := d.varint(f.name, intBits)
		if err != nil {
			return err
		}
		*f.v = int(x)
	}
	if l.Generation, err = d.uvarint("Layout.Generation", 64); err != nil {
		return err
	}
	n, err := d.uvarint("Layout.Targets", 64)
	if err != nil {
		return err
	}
	if n > uint64(len(d.b)) {
		return d.fail("Layout.Targets", "count exceeds the remaining bytes")
	}
	if n == 0 {
		return nil
	}
	l.Targets = make([]string, n)
	for i := range l.Targets {
		t, err := d.bytes("Layout.Targets")
		if err != nil {
			return err
		}
		l.Targets[i] = d.names.name(t)
	}
	return nil
}
