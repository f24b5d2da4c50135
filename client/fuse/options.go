package fuse

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-hpc/strata/qos"
)

// Options configure a mount. Start from DefaultOptions: Mount fills in a
// zero size or name, but takes durations and booleans as given.
type Options struct {
	// AttrTimeout is how long the kernel caches attributes, EntryTimeout
	// how long it caches a name's lookup. Small values keep close-to-open
	// across mounts tight; 0 disables the cache.
	AttrTimeout  time.Duration
	EntryTimeout time.Duration
	// MaxWrite is the largest FUSE read or write request in bytes (the
	// kernel caps it at 1 MiB here). Default 1 MiB.
	MaxWrite int
	// MaxReadahead is the kernel's readahead window in bytes, applied to
	// the mount's backing device. Default 1 MiB.
	MaxReadahead int
	// MaxBackground is how many asynchronous requests (readahead) the
	// kernel keeps in flight. Default 32.
	MaxBackground int
	// WriteBehind is how many bytes of written data the mount may hold in
	// flight to the data servers, over all files; the mount may hold as
	// much again in blocks read ahead. Default 64 MiB.
	WriteBehind int64
	// DirectIO makes every open of a regular file bypass the kernel's
	// page cache, as if opened with O_DIRECT (libfuse's direct_io): reads
	// are answered from the mount's own read-ahead and written straight
	// into the reader's buffer, writes go from the writer's buffer to the
	// write-behind. A large sequential read then costs about half the CPU
	// (no page-cache copy and bookkeeping per byte); but nothing is cached
	// across opens, and every small read is a request to the mount. Shared
	// mmap still works where the kernel has FUSE_DIRECT_IO_ALLOW_MMAP
	// (Linux 6.6). Default off.
	DirectIO bool
	// StreamMin is the size from which a read-only open of a file that
	// is new to the mount bypasses the page cache, as write-only opens do
	// (stream.go): about a quarter less CPU per byte for a large
	// sequential read or write, and a file read once does not fill the
	// page cache; a file is cached from its second open on. Needs Linux
	// 6.6 (FUSE_DIRECT_IO_ALLOW_MMAP); negative: no open streams. Default
	// 32 MiB.
	StreamMin int64
	// AllowOther lets users other than the one who mounted use the mount
	// (with default_permissions, the kernel checks permissions).
	AllowOther bool
	// Debug logs every FUSE request at debug level.
	Debug bool
	// FsName is the source shown by mount(8) and df; Name the type suffix
	// ("fuse.strata").
	FsName string
	Name   string
	// Tag is the QoS tag of files opened by a process that is not in a
	// Slurm job's cgroup (a job's process is tagged with its job, class
	// io); default no job, class io.
	Tag qos.Tag
	// Extra are more mount options, as -o takes them ("ro", "noatime").
	Extra []string
	// ProbeTimeout bounds the check that the MDS answers, before mounting.
	// Default 5s.
	ProbeTimeout time.Duration
	// UnmountTimeout is how long, once the kernel connection has ended
	// (an unmount, an abort), the mount keeps trying to reach the MDS for
	// what is still in flight: requests the kernel stopped waiting for and
	// the write back of files left open. Then it gives up, says so in its
	// log and ends, so that an unmount never hangs on an MDS without a
	// leader. Default 5s.
	UnmountTimeout time.Duration
	// Log receives the mount's log; nil discards it.
	Log *slog.Logger
}

// DefaultOptions returns the defaults: 1s attribute and entry caches,
// 1 MiB requests and readahead, allow_other, source and type "strata".
func DefaultOptions() Options {
	return Options{
		AttrTimeout:    time.Second,
		EntryTimeout:   time.Second,
		MaxWrite:       1 << 20,
		MaxReadahead:   1 << 20,
		MaxBackground:  32,
		WriteBehind:    64 << 20,
		StreamMin:      defaultStreamMin,
		AllowOther:     true,
		FsName:         "strata",
		Name:           "strata",
		ProbeTimeout:   5 * time.Second,
		UnmountTimeout: 5 * time.Second,
	}
}

// withDefaults fills zero sizes and names from DefaultOptions.
func (o Options) withDefaults() Options {
	def := DefaultOptions()
	if o.MaxWrite == 0 {
		o.MaxWrite = def.MaxWrite
	}
	if o.MaxReadahead == 0 {
		o.MaxReadahead = def.MaxReadahead
	}
	if o.MaxBackground == 0 {
		o.MaxBackground = def.MaxBackground
	}
	if o.WriteBehind == 0 {
		o.WriteBehind = def.WriteBehind
	}
	if o.StreamMin == 0 {
		o.StreamMin = def.StreamMin
	}
	if o.FsName == "" {
		o.FsName = def.FsName
	}
	if o.Name == "" {
		o.Name = def.Name
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = def.ProbeTimeout
	}
	if o.UnmountTimeout == 0 {
		o.UnmountTimeout = def.UnmountTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.AttrTimeout < 0 || o.EntryTimeout < 0:
		return fmt.Errorf("fuse: negative cache timeout (attr %v, entry %v)", o.AttrTimeout, o.EntryTimeout)
	case o.MaxWrite < 4096 || o.MaxWrite > 16<<20:
		return fmt.Errorf("fuse: max write %d out of range (4 KiB to 16 MiB)", o.MaxWrite)
	case o.MaxReadahead < 0 || o.MaxReadahead > 1<<30:
		return fmt.Errorf("fuse: max readahead %d out of range", o.MaxReadahead)
	case o.MaxBackground < 1 || o.MaxBackground > 1<<15:
		return fmt.Errorf("fuse: max background %d out of range", o.MaxBackground)
	case o.UnmountTimeout < 0:
		return fmt.Errorf("fuse: negative unmount timeout %v", o.UnmountTimeout)
	case o.WriteBehind < 1<<20:
		return fmt.Errorf("fuse: write behind %d is less than 1 MiB", o.WriteBehind)
	}
	return nil
}
