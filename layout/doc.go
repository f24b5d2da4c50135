// Package layout owns how a file's bytes map onto data servers: the layout
// and layout-policy types, the layout string grammar
// ("width=4,unit=1M,scheme=none"), the stripe arithmetic that cuts a byte
// range into per-column extents, and placement of columns over data servers.
//
// It is pure policy: it must not import daemons, the transport, raft,
// fasthttp, go-fuse or gopsutil.
package layout
