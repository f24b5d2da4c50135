package main

import (
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// rpcOptions are the keys that bound a daemon's RPC server
// (rpc.ServerConfig). body_memory is the budget of the bodies the server
// holds: streamed ones on a data server (data), ones read whole on an MDS.
func rpcOptions(o *options, c *rpc.ServerConfig, data bool) {
	d := rpc.DefaultServerConfig()
	*c = d
	o.int("max_conns_per_peer", "most `connections` one peer address may hold; more are refused", &c.MaxConnsPerPeer)
	o.dur("read_timeout", "`time` a peer has to send a request's headers (and a metadata call's body)", &c.ReadTimeout)
	o.dur("idle_timeout", "an idle keep-alive connection is closed after this `time`", &c.IdleTimeout)
	if !data {
		o.add("body_memory", "`size` the bodies of calls may hold at once over every connection; a flood waits, then is refused", layout.FormatSize(c.BufferedBodyMemory), func(v string) error {
			return setBodyMemory(v, &c.BufferedBodyMemory, rpc.DefaultMaxMetaBody)
		})
		return
	}
	o.dur("data_read_timeout", "`time` a peer has to send a write's data once its headers are in", &c.DataReadTimeout)
	o.add("body_memory", "request-body `size` held at once over every connection; a flood waits, then is refused", layout.FormatSize(c.BodyMemory), func(v string) error {
		return setBodyMemory(v, &c.BodyMemory, rpc.DefaultMaxDataBody)
	})
}

// setBodyMemory sets *p to the size v, refused under min (one largest body).
func setBodyMemory(v string, p *int64, min int64) error {
	n, err := layout.ParseSize(v)
	if err != nil || n < min {
		return fmt.Errorf("%q is not a size of at least %s", v, layout.FormatSize(min))
	}
	*p = n
	return nil
}
