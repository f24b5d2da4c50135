// Package mpiio maps MPI-IO hints to Strata layouts: the hint table
// (striping_factor, striping_unit and strata_scheme become a layout's
// width, unit and scheme; cb_nodes, cb_buffer_size, romio_* and every other
// key are passed to the MPI-IO layer), their validation, the hints Strata
// recommends for a layout, and the ROMIO hints file (ROMIO_HINTS) built
// from them.
//
// The C side lives in mpiio/shim: libstrata_mpiio.so, a PMPI library that
// intercepts MPI_File_open and, when a new file is created on a Strata
// mount, has rank 0 set the layout string [Spec] builds (the same mapping,
// written in C) as the file's user.strata.layout xattr. The MDS validates
// it; [Layout] gives the same verdict in Go with a message that names the
// hint.
//
// It is pure policy: it imports layout and the standard library only, never
// a daemon, the client, fasthttp, raft, go-fuse or gopsutil.
package mpiio
