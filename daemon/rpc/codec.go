package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"sync"
)

// Version is the encoding version written first in every frame.
const Version byte = 1

// ErrDecode is wrapped by every decoding error.
var ErrDecode = errors.New("rpc: malformed message")

// The codec walks exported struct fields in declaration order. Fields are
// appended at the end of a struct only; a decoder that meets the end of its
// input before a struct's trailing fields leaves them zero, so an older
// peer's message decodes in a newer binary. Supported field kinds: bool,
// signed integers (zig-zag varint), unsigned integers (uvarint), float64,
// string, []byte, slices, maps with string keys (sorted on encode),
// pointers to structs (a presence byte) and nested structs.

type encodeFn func(b []byte, v reflect.Value) []byte
type decodeFn func(d *decoder, v reflect.Value) error

type plan struct {
	enc encodeFn
	dec decodeFn
}

var (
	plans sync.Map // reflect.Type -> *plan; complete plans only

	// buildMu serializes building plans. pending holds the plans of the
	// build in progress, so that recursive types find their own
	// (filled-in later) plan; they are published to plans only once all
	// are complete, so no other goroutine ever runs a half-built plan.
	buildMu sync.Mutex
	pending map[reflect.Type]*plan
)

// Marshal appends the encoding of *msg (a pointer to a struct) to b.
func Marshal(b []byte, msg any) []byte {
	if h, ok := msg.(handCoded); ok {
		return h.appendRPC(b)
	}
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("rpc: Marshal of %T, want pointer to struct", msg))
	}
	return planFor(v.Elem().Type()).enc(b, v.Elem())
}

// Unmarshal decodes b into *msg (a pointer to a struct). Trailing bytes
// after the message are an error.
func Unmarshal(b []byte, msg any) error {
	d := decoder{b: b}
	if h, ok := msg.(handCoded); ok {
		if err := h.decodeRPC(&d); err != nil {
			return err
		}
	} else if err := unmarshalReflect(&d, msg); err != nil {
		return err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrDecode, len(d.b))
	}
	return nil
}

// unmarshalReflect decodes d into *msg with msg's reflective plan.
func unmarshalReflect(d *decoder, msg any) error {
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%w: Unmarshal into %T, want pointer to struct", ErrDecode, msg)
	}
	return planFor(v.Elem().Type()).dec(d, v.Elem())
}

type decoder struct {
	b     []byte
	depth int
}

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint", ErrDecode)
	}
	d.b = d.b[n:]
	return x, nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%w: length %d exceeds %d remaining bytes", ErrDecode, n, len(d.b))
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out, nil
}

// count reads a collection length, bounded by the remaining input (every
// element takes at least one byte), so garbage cannot force a huge
// allocation.
func (d *decoder) count() (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)) {
		return 0, fmt.Errorf("%w: count %d exceeds %d remaining bytes", ErrDecode, n, len(d.b))
	}
	return int(n), nil
}

const maxDepth = 32

func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	pending = map[reflect.Type]*plan{}
	p := nestedPlan(t)
	for pt, pp := range pending {
		plans.Store(pt, pp)
	}
	pending = nil
	return p
}

// nestedPlan returns the plan of t during a build (buildMu held).
func nestedPlan(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p := pending[t]; p != nil {
		return p
	}
	p := &plan{}
	pending[t] = p
	p.enc, p.dec = build(t)
	return p
}

func build(t reflect.Type) (encodeFn, decodeFn) {
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte {
				if v.Bool() {
					return append(b, 1)
				}
				return append(b, 0)
			}, func(d *decoder, v reflect.Value) error {
				if len(d.b) == 0 || d.b[0] > 1 {
					return fmt.Errorf("%w: bad bool", ErrDecode)
				}
				v.SetBool(d.b[0] == 1)
				d.b = d.b[1:]
				return nil
			}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return func(b []byte, v reflect.Value) []byte {
				return binary.AppendVarint(b, v.Int())
			}, func(d *decoder, v reflect.Value) error {
				x, n := binary.Varint(d.b)
				if n <= 0 {
					return fmt.Errorf("%w: bad varint", ErrDecode)
				}
				if bits < 64 && (x < -(1<<(bits-1)) || x >= 1<<(bits-1)) {
					return fmt.Errorf("%w: %d overflows int%d", ErrDecode, x, bits)
				}
				d.b = d.b[n:]
				v.SetInt(x)
				return nil
			}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		bits := t.Bits()
		return func(b []byte, v reflect.Value) []byte {
				return binary.AppendUvarint(b, v.Uint())
			}, func(d *decoder, v reflect.Value) error {
				x, err := d.uvarint()
				if err != nil {
					return err
				}
				if bits < 64 && x >= 1<<bits {
					return fmt.Errorf("%w: %d overflows uint%d", ErrDecode, x, bits)
				}
				v.SetUint(x)
				return nil
			}
	case reflect.Float64:
		return func(b []byte, v reflect.Value) []byte {
				return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
			}, func(d *decoder, v reflect.Value) error {
				if len(d.b) < 8 {
					return fmt.Errorf("%w: short float", ErrDecode)
				}
				v.SetFloat(math.Float64frombits(binary.LittleEndian.Uint64(d.b)))
				d.b = d.b[8:]
				return nil
			}
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte {
				s := v.String()
				b = binary.AppendUvarint(b, uint64(len(s)))
				return append(b, s...)
			}, func(d *decoder, v reflect.Value) error {
				s, err := d.bytes()
				if err != nil {
					return err
				}
				v.SetString(string(s))
				return nil
			}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return func(b []byte, v reflect.Value) []byte {
					s := v.Bytes()
					b = binary.AppendUvarint(b, uint64(len(s)))
					return append(b, s...)
				}, func(d *decoder, v reflect.Value) error {
					s, err := d.bytes()
					if err != nil {
						return err
					}
					if len(s) == 0 {
						v.SetBytes(nil)
						return nil
					}
					v.SetBytes(append([]byte(nil), s...))
					return nil
				}
		}
		return buildSlice(t)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic("rpc: map keys must be strings: " + t.String())
		}
		return buildMap(t)
	case reflect.Pointer:
		if t.Elem().Kind() != reflect.Struct {
			panic("rpc: only pointers to structs are encodable: " + t.String())
		}
		return buildPointer(t)
	case reflect.Struct:
		return buildStruct(t)
	}
	panic("rpc: unsupported field type " + t.String())
}

func buildSlice(t reflect.Type) (encodeFn, decodeFn) {
	ep := nestedPlan(t.Elem())
	return func(b []byte, v reflect.Value) []byte {
			n := v.Len()
			b = binary.AppendUvarint(b, uint64(n))
			for i := 0; i < n; i++ {
				b = ep.enc(b, v.Index(i))
			}
			return b
		}, func(d *decoder, v reflect.Value) error {
			n, err := d.count()
			if err != nil {
				return err
			}
			if n == 0 {
				v.SetZero()
				return nil
			}
			s := reflect.MakeSlice(t, n, n)
			for i := 0; i < n; i++ {
				if err := ep.dec(d, s.Index(i)); err != nil {
					return err
				}
			}
			v.Set(s)
			return nil
		}
}

func buildMap(t reflect.Type) (encodeFn, decodeFn) {
	ep := nestedPlan(t.Elem())
	return func(b []byte, v reflect.Value) []byte {
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			b = binary.AppendUvarint(b, uint64(len(keys)))
			for _, k := range keys {
				b = binary.AppendUvarint(b, uint64(len(k.String())))
				b = append(b, k.String()...)
				b = ep.enc(b, v.MapIndex(k))
			}
			return b
		}, func(d *decoder, v reflect.Value) error {
			n, err := d.count()
			if err != nil {
				return err
			}
			if n == 0 {
				v.SetZero()
				return nil
			}
			m := reflect.MakeMapWithSize(t, n)
			prev := ""
			for i := 0; i < n; i++ {
				k, err := d.bytes()
				if err != nil {
					return err
				}
				if i > 0 && string(k) <= prev {
					return fmt.Errorf("%w: map keys not strictly sorted", ErrDecode)
				}
				prev = string(k)
				e := reflect.New(t.Elem()).Elem()
				if err := ep.dec(d, e); err != nil {
					return err
				}
				m.SetMapIndex(reflect.ValueOf(prev).Convert(t.Key()), e)
			}
			v.Set(m)
			return nil
		}
}

func buildPointer(t reflect.Type) (encodeFn, decodeFn) {
	ep := nestedPlan(t.Elem())
	return func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return append(b, 0)
			}
			return ep.enc(append(b, 1), v.Elem())
		}, func(d *decoder, v reflect.Value) error {
			if len(d.b) == 0 || d.b[0] > 1 {
				return fmt.Errorf("%w: bad presence byte", ErrDecode)
			}
			present := d.b[0] == 1
			d.b = d.b[1:]
			if !present {
				v.SetZero()
				return nil
			}
			p := reflect.New(t.Elem())
			if err := ep.dec(d, p.Elem()); err != nil {
				return err
			}
			v.Set(p)
			return nil
		}
}

func buildStruct(t reflect.Type) (encodeFn, decodeFn) {
	var idx []int
	var fps []*plan
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			idx = append(idx, i)
			fps = append(fps, nestedPlan(f.Type))
		}
	}
	return func(b []byte, v reflect.Value) []byte {
			for j, i := range idx {
				b = fps[j].enc(b, v.Field(i))
			}
			return b
		}, func(d *decoder, v reflect.Value) error {
			if d.depth++; d.depth > maxDepth {
				return fmt.Errorf("%w: nested too deep", ErrDecode)
			}
			defer func() { d.depth-- }()
			for j, i := range idx {
				if len(d.b) == 0 && d.depth == 1 {
					return nil // older peer: trailing fields stay zero
				}
				if err := fps[j].dec(d, v.Field(i)); err != nil {
					return fmt.Errorf("%s.%s: %w", t.Name(), t.Field(i).Name, err)
				}
			}
			return nil
		}
}
