package main

import (
	"context"
	"errors"
	"strings"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// strataPrefix marks an argument as a Strata path where a command also
// takes local paths (cp); every other client command accepts it too.
const strataPrefix = "strata:"

// strataPath returns the Strata path an argument names.
func strataPath(arg string) string {
	return strings.TrimPrefix(arg, strataPrefix)
}

// withClient runs fn with a client of the MDS at addr, authenticated as
// clientAuth says, and turns a failure to reach that MDS into an error
// that says what to do about it.
func withClient(ctx context.Context, a *app, addr string, fn func(c *client.Client) error) error {
	return withClientSecret(ctx, a, addr, "", fn)
}

// withClientSecret is withClient with the cluster secret read from
// secretFile (if not empty).
func withClientSecret(ctx context.Context, a *app, addr, secretFile string, fn func(c *client.Client) error) error {
	cfg := client.DefaultConfig()
	cfg.MDS = addr
	if err := clientAuth(a, &cfg, secretFile); err != nil {
		return err
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(c)
	if errors.Is(err, rpc.ErrUnavailable) && strings.Contains(err.Error(), addr+" mds.") {
		return &unreachableError{addr: addr, err: unavailableCause(err)}
	}
	return err
}

// unavailableCause strips the transport's prefixes from a dial error,
// keeping the system's reason ("connection refused").
func unavailableCause(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "closed connection before returning the first response byte") {
		return errors.New("it closed the connection without an answer: if it speaks TLS, set STRATA_TLS_CA to the cluster's CA file (docs/security.md)")
	}
	if i := strings.Index(msg, "tls: "); i >= 0 {
		return errors.New(msg[i:])
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return errors.New(msg[i+2:])
	}
	return err
}
