package layout

import "fmt"

// Layout is a file's concrete layout: its geometry, the data server that
// holds each column, and a generation that changes when the file is
// restriped. Each data server holds one component per (inode, generation,
// column).
type Layout struct {
	Width      int      // data columns
	Unit       int64    // stripe unit in bytes
	Scheme     Scheme   // redundancy
	Generation uint64   // bumped on restripe
	Targets    []string // data server id of each column, len == Width
}

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
	if len(l.Targets) != l.Width {
		return fmt.Errorf("%w: layout has %d targets for width %d", ErrInvalid, len(l.Targets), l.Width)
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

// ColumnSize is how many bytes of a file of the given size column col holds.
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
