package layout

import "fmt"

// Layout is a file's concrete layout: its geometry, the data server that
// holds each component, and a generation that changes when the file is
// restriped. Each data server holds one component per (inode, generation,
// component index); Scheme documents the order of the components.
//
// A file's bytes are cut into stripe units laid round-robin over the Width
// data columns; a stripe row is Width units. With mirror:N each data column
// has N identical copies; with rs:K+M (Width == K) each row's K data units
// have M parity units, one in each parity component at the row's column
// offset. Data columns hold exactly the file's bytes (ColumnSize); a parity
// component holds whole units (ParitySize). Bytes past a column's end read
// as zeros, and the parity of zeros is zeros, so sparse rows are consistent.
type Layout struct {
	Width      int      // data columns (K for rs:K+M)
	Unit       int64    // stripe unit in bytes
	Scheme     Scheme   // redundancy
	Generation uint64   // bumped on restripe
	Targets    []string // data server id of each component, len == Components()
}

// MaxComponent is the most bytes one component may hold: 8 TiB, half of
// what ext4 with 4 KiB blocks stores in one file, the strictest file
// system a data server is expected on.
const MaxComponent int64 = 1 << 43

// MaxSize is the size of the largest file the layout addresses: one whose
// every component holds at most MaxComponent bytes. Past it, a write or
// truncate fails with EFBIG, as a local file system answers past its
// maximum file size.
func (l Layout) MaxSize() int64 { return MaxComponent / l.Unit * l.RowSize() }

// Components is how many components (and Targets) the layout has.
func (l Layout) Components() int { return l.Scheme.Components(l.Width) }

// MirrorComponent is the component that holds copy r of data column col
// of a mirror:N layout.
func (l Layout) MirrorComponent(col, r int) int { return r*l.Width + col }

// RowSize is the number of file bytes in one stripe row.
func (l Layout) RowSize() int64 { return int64(l.Width) * l.Unit }

// Policy returns the layout's geometry as a fully-set policy.
func (l Layout) Policy() Policy {
	return Policy{Width: l.Width, Unit: l.Unit, Scheme: l.Scheme, HasScheme: true}
}

// String formats the geometry in the grammar's form.
func (l Layout) String() string { return l.Policy().String() }

// Validate checks that the layout is complete and consistent.
func (l Layout) Validate() error {
	if l.Width < 1 || l.Unit < 1 {
		return fmt.Errorf("%w: layout needs a width and a unit", ErrInvalid)
	}
	if err := l.Policy().Validate(); err != nil {
		return err
	}
	if n := l.Components(); len(l.Targets) != n {
		return fmt.Errorf("%w: layout %s has %d targets, want %d", ErrInvalid, l, len(l.Targets), n)
	}
	seen := make(map[string]bool, len(l.Targets))
	for i, t := range l.Targets {
		if seen[t] {
			return fmt.Errorf("%w: layout %s puts two components on data server %q (component %d)", ErrInvalid, l, t, i)
		}
		seen[t] = true
	}
	return nil
}

// Extent is the part of a file byte range that falls in one column: Len
// bytes at column offset ColOff, which are file bytes [FileOff, FileOff+Len).
type Extent struct {
	Col     int
	ColOff  int64
	FileOff int64
	Len     int64
}

// Extents cuts the file range [off, off+n) into per-stripe-unit extents in
// file order. Adjacent extents of one column are not merged; see Columns.
func (l Layout) Extents(off, n int64) []Extent {
	var out []Extent
	u, w := l.Unit, int64(l.Width)
	for n > 0 {
		su := off / u // stripe unit index
		in := off % u // offset inside the unit
		ln := u - in
		if ln > n {
			ln = n
		}
		out = append(out, Extent{
			Col:     int(su % w),
			ColOff:  (su/w)*u + in,
			FileOff: off,
			Len:     ln,
		})
		off += ln
		n -= ln
	}
	return out
}

// Columns groups the extents of [off, off+n) by column. Within a column the
// extents are in increasing ColOff and contiguous in the column, so each
// column's share is one contiguous column range [ColOff of the first,
// ColOff of the last + its Len).
func (l Layout) Columns(off, n int64) [][]Extent {
	cols := make([][]Extent, l.Width)
	for _, e := range l.Extents(off, n) {
		cols[e.Col] = append(cols[e.Col], e)
	}
	return cols
}

// ParitySize is how many bytes each parity component of an rs:K+M layout
// holds for a file of the given size: a whole unit per row the file
// reaches.
func (l Layout) ParitySize(size int64) int64 {
	row := l.RowSize()
	return (size + row - 1) / row * l.Unit
}

// ComponentSize is how many bytes component comp (an index into Targets)
// holds at least for a file of the given size: its data column's share,
// or for a parity component of rs:K+M, ParitySize. A component may hold
// more (a writer's bytes not yet committed), never less: readers take a
// shorter one for lost bytes, not for a hole.
func (l Layout) ComponentSize(size int64, comp int) int64 {
	switch l.Scheme.Kind {
	case KindRS:
		if comp >= l.Width {
			return l.ParitySize(size)
		}
	case KindMirror:
		comp %= l.Width
	}
	return l.ColumnSize(size, comp)
}

// ColumnSize is how many bytes of a file of the given size data column col
// holds.
func (l Layout) ColumnSize(size int64, col int) int64 {
	u, w := l.Unit, int64(l.Width)
	full := size / u // complete stripe units
	rows := full / w
	n := rows * u
	rem := full % w // complete units in the last, partial row
	switch c := int64(col); {
	case c < rem:
		n += u
	case c == rem:
		n += size % u
	}
	return n
}
