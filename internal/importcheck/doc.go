// Command importcheck enforces the direction of dependencies that
// ARCHITECTURE.md draws, for `make lint`:
//
//   - The pure policy packages (layout, qos, mpiio, jobtier and everything
//     below them) depend on no daemon, not on the client, and not on
//     fasthttp, raft, go-fuse or gopsutil, directly or transitively.
//   - No package under daemon/ imports another daemon's packages; daemon/rpc
//     (the shared transport) is the one exception.
//
// It runs `go list -json` on the module and prints one line per violation;
// it exits 1 if there is any. Test files are not checked: an integration
// test may start several daemons.
//
// It imports only the standard library.
package main
