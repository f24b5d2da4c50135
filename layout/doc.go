// Package layout owns how a file's bytes map onto data servers: the layout
// and layout-policy types, the layout string grammar
// ("width=4,unit=1M,scheme=none"), the stripe arithmetic that cuts a byte
// range into per-column extents, the order of a layout's components under
// each redundancy scheme (see Scheme), placement of components over data
// servers, and the Reed-Solomon codec (the only place that builds one).
//
// It is pure policy: it must not import daemons, the transport, raft,
// fasthttp, go-fuse or gopsutil.
package layout
