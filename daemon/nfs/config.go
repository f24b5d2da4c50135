package nfs

import (
	"fmt"
	"time"

	"github.com/strata-hpc/strata/internal/identity"
)

// Config configures the NFSv4.1 front end.
type Config struct {
	// Addr is the TCP address to serve on ("127.0.0.1:2049"; port 0 picks one).
	Addr string
	// Exports lists what may be mounted, by whom (see Export).
	Exports []Export
	// Lease is the NFSv4 lease: a client that neither sends SEQUENCE nor
	// renews within it loses its opens and locks.
	Lease time.Duration
	// MaxRecord bounds an RPC record; a larger one closes the connection.
	MaxRecord int
	// MaxOps bounds the operations of one COMPOUND (NFS4ERR_TOO_MANY_OPS).
	MaxOps int
	// MaxIO is the largest READ or WRITE (the client's rsize and wsize).
	MaxIO int
	// Slots is the number of session slots offered (concurrent requests).
	Slots int
	// DataServers maps a data server's RPC address to the address (host:port)
	// where clients reach its NFSv3 service (`strata ds --nfs`); with it
	// or DataServerPort set the front end hands out flex-files layouts.
	DataServers map[string]string
	// DataServerPort, if set, is the NFSv3 port of the data servers not in
	// DataServers, on the host of their RPC address.
	DataServerPort int
	// Nodemap is the identity layer's map of trusted networks and squash
	// rules (the MDS's trusted_nodes and squash): AUTH_SYS from a trusted
	// network is taken as it comes, root from any other is squashed
	// (trust.go). The zero value trusts every client an export allows.
	Nodemap identity.Nodemap
	// FenceAddrs maps a data server's RPC address to where the front end
	// itself reaches its NFSv3 service to fence a layout (recall.go), when
	// that is not the DataServers address clients use.
	FenceAddrs map[string]string
	// RecallTimeout is how long a client has to return a recalled layout
	// before it is fenced.
	RecallTimeout time.Duration
	// HandleKey signs file handles; keep it across restarts (the cluster
	// secret) or clients see NFS4ERR_BADHANDLE after one.
	HandleKey []byte
}

// DefaultConfig returns the defaults: loopback clients only, root squashed.
func DefaultConfig() Config {
	e, _ := ParseExport("/ 127.0.0.0/8")
	return Config{
		Addr:      "127.0.0.1:2049",
		Exports:   []Export{e},
		Lease:     30 * time.Second,
		MaxRecord: 1<<20 + 64<<10,
		MaxOps:    64,
		MaxIO:     1 << 20,
		Slots:     64,

		RecallTimeout: 15 * time.Second,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("%w: no address", ErrConfig)
	case len(c.Exports) == 0:
		return fmt.Errorf("%w: no export", ErrConfig)
	case c.Lease < time.Second:
		return fmt.Errorf("%w: lease %v under a second", ErrConfig, c.Lease)
	case c.MaxIO < 4096 || c.MaxRecord < c.MaxIO+4096:
		return fmt.Errorf("%w: MaxIO %d must be at least 4096 and leave 4 KiB of MaxRecord %d", ErrConfig, c.MaxIO, c.MaxRecord)
	case c.MaxOps < 8 || c.Slots < 1:
		return fmt.Errorf("%w: MaxOps %d (at least 8) or Slots %d (at least 1)", ErrConfig, c.MaxOps, c.Slots)
	case c.RecallTimeout <= 0:
		return fmt.Errorf("%w: recall timeout %v", ErrConfig, c.RecallTimeout)
	case len(c.HandleKey) == 0:
		return fmt.Errorf("%w: no file handle key", ErrConfig)
	}
	return nil
}
