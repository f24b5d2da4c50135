package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// server is what every daemon package's *Server is.
type server interface {
	Start(ctx context.Context) error
	Ready() <-chan struct{}
	Close() error
}

// startAll starts servers in order and waits until each is ready. On
// failure it closes the ones it started.
func startAll(ctx context.Context, names []string, servers []server) error {
	for i, s := range servers {
		err := s.Start(ctx)
		if err == nil {
			select {
			case <-s.Ready():
			case <-ctx.Done():
				err = fmt.Errorf("not ready: %w", ctx.Err())
			}
		}
		if err != nil {
			_ = s.Close()
			_ = closeAll(servers[:i])
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}

// closeAll closes servers in reverse order.
func closeAll(servers []server) error {
	var errs []error
	for i := len(servers) - 1; i >= 0; i-- {
		errs = append(errs, servers[i].Close())
	}
	return errors.Join(errs...)
}

// runUntilDone starts servers, logs that they are up, waits for ctx (SIGINT
// or SIGTERM) and closes them.
func runUntilDone(ctx context.Context, log *slog.Logger, names []string, servers []server) error {
	if err := startAll(ctx, names, servers); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}
	log.Info("ready")
	<-ctx.Done()
	log.Info("stopping")
	return closeAll(servers)
}

// parseDaemon is the start of every daemon command: it registers o's keys
// and memory_limit as flags, parses args (the daemons take no arguments),
// applies the environment and the config file, sets the soft memory limit
// and returns the logger at *logLevel.
func parseDaemon(a *app, f *cmdFlags, o *options, args []string, logLevel *string) (*slog.Logger, error) {
	var mem memoryLimit
	memoryLimitOption(o, &mem)
	o.register(f)
	rest, err := f.parse(a, args)
	if err != nil {
		return nil, err
	}
	if err := f.nargs(rest, 0, 0); err != nil {
		return nil, err
	}
	if err := o.apply(a); err != nil {
		return nil, err
	}
	log, err := newLogger(a.stderr, *logLevel)
	if err != nil {
		return nil, usageErrorf(o.cmd, "%v", err)
	}
	if a.stdlog {
		slog.SetDefault(log)
	}
	mem.apply(a, log)
	return log, nil
}
