package ds3

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Missing components: a hole is not a loss (as client/missing.go).
//
// A data server answers a read of a component it does not hold, or holds
// shorter, as it would a hole: with fewer bytes. Writers keep every
// component at least its share of the file's published size
// (layout.ComponentSize), so a component that ends before that share has
// lost bytes: the read fails with NFS3ERR_IO — the kernel client then
// reports the layout error and reads another mirror or through the MDS —
// never zeros. Only a short read asks the MDS for the size (Config.Size);
// if it cannot be learned the read fails too: zeros are never a guess.

// errNoSize is a short read with no Config.Size to judge it by.
var errNoSize = errors.New("ds3: no way to learn the file's size")

// checkShort returns an error wrapping EIO if the handle's component,
// which returned got of the n bytes asked at column offset colOff, ends
// before its column's share of the file's size.
func (s *Server) checkShort(ctx context.Context, h Handle, colOff, n, got uint64) error {
	if s.cfg.Size == nil {
		return fmt.Errorf("ds3: short read of inode %d component %d: %w (%w)", h.Ino, h.Comp, errNoSize, syscall.EIO)
	}
	size, err := s.cfg.Size(ctx, h.Ino)
	if err != nil {
		s.log.Warn("short read: file size unknown", "ino", h.Ino, "comp", h.Comp, "err", err)
		return fmt.Errorf("ds3: short read of inode %d component %d: size: %w (%w)", h.Ino, h.Comp, err, syscall.EIO)
	}
	share := uint64(shareOf(h, size))
	if need := min(colOff+n, share); colOff+got < need {
		s.log.Warn("component lacks bytes the file's size says it holds", "ino", h.Ino, "gen", h.Gen, "comp", h.Comp, "ends", colOff+got, "needs", need, "size", size)
		return fmt.Errorf("ds3: inode %d component %d ends at %d, the file's size %d needs %d: %w", h.Ino, h.Comp, colOff+got, size, need, syscall.EIO)
	}
	return nil
}

// shareOf is how many bytes the handle's component holds at least for a
// file of the given size: its data column's (mirror copies share their
// column's).
func shareOf(h Handle, size uint64) int64 {
	l := layout.Layout{Width: int(h.Width), Unit: int64(h.Unit)}
	return l.ColumnSize(int64(min(size, 1<<62)), int(h.Col))
}

// Getattrer is what SizeFrom needs of an MDS client (*client.Client).
type Getattrer interface {
	Getattr(ctx context.Context, ino uint64) (*rpc.Attr, error)
}

// SizeFrom returns a Config.Size that asks the MDS through c.
func SizeFrom(c Getattrer) func(context.Context, uint64) (uint64, error) {
	return func(ctx context.Context, ino uint64) (uint64, error) {
		a, err := c.Getattr(ctx, ino)
		if err != nil {
			return 0, err
		}
		return a.Size, nil
	}
}
