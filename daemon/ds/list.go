package ds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// handleList lists the components of one store subdirectory for the
// MDS's GC scan (daemon/mds/gcscan.go); it needs an admin capability.
func (s *Server) handleList(_ context.Context, req *rpc.CompListReq) (*rpc.CompListResp, error) {
	if err := req.Cap.Verify(s.secret, s.clock(), 0, 0, capability.OpAdmin); err != nil {
		return nil, rpc.Errorf(syscall.EACCES, "ds: list: "+err.Error())
	}
	if req.Sub > 0xff {
		return nil, rpc.Errorf(syscall.EINVAL, fmt.Sprintf("ds: list: subdirectory %d is not in [0, 255]", req.Sub))
	}
	comps, err := s.store.listSub(uint8(req.Sub))
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.CompListResp{Comps: comps}, nil
}

// listSub returns the components (and sizes) in the subdirectory of the
// inodes whose low byte is sub.
func (st *store) listSub(sub uint8) ([]rpc.DSComp, error) {
	dir := filepath.Join(st.dir, subdir(rpc.ComponentID{Ino: uint64(sub)}))
	files, err := st.disk.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list store: %w", err)
	}
	var out []rpc.DSComp
	for _, f := range files {
		id, ok := parseComponentName(f.Name())
		if !ok || !f.Type().IsRegular() {
			continue
		}
		info, err := f.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list store: %w", err)
		}
		out = append(out, rpc.DSComp{ID: id, Size: uint64(info.Size())})
	}
	return out, nil
}
