package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// devDir is where `strata dev` keeps its data unless told otherwise.
func devDir() string { return filepath.Join(os.TempDir(), "strata-dev") }

func runDev(ctx context.Context, a *app, args []string) error {
	f := newFlags("dev", "", `
Run a whole Strata in this process, on loopback: one MDS, --ds data
servers and the admin API, with all data under --dir (kept across runs:
start it again on the same directory and the namespace is still there).
It listens on fixed ports, so that client commands find it with no flags:
  strata dev --dir /tmp/s &
  strata ls /
The admin API's changes (PUT /v1/qos/policy) take the bearer token it
prints: --admin-token, else the one kept in DIR/admin-token (made at the
first run). SIGINT (Ctrl-C) or SIGTERM stops it cleanly.`)
	dir, logLevel := devDir(), "error"
	nds, dsPort := 4, 7201
	mdsAddr, raftAddr, adminAddr, defLayout := "127.0.0.1:7000", "127.0.0.1:7100", "127.0.0.1:7080", ""
	o := newOptions("dev")
	o.str("dir", "`directory` of all data (the MDS's log, each data server's store, the secret)", &dir)
	o.int("ds", "`number` of data servers", &nds)
	o.str("mds_addr", "MDS `address`", &mdsAddr)
	o.str("raft_addr", "MDS raft `address`", &raftAddr)
	o.str("admin_addr", "admin REST API `address`; \"off\" disables it", &adminAddr)
	var adminToken string
	o.str("admin_token", "bearer `token` of the admin API's changes; default: DIR/admin-token's, made at the first run", &adminToken)
	o.int("ds_port", "`port` of the first data server, the others follow; 0 picks free ports", &dsPort)
	o.str("default_layout", "cluster default `layout` string; default the MDS's (width=4,unit=1M,scheme=none)", &defLayout)
	var nf nfsFlags
	nfsOptions(o, &nf)
	o.str("log_level", "`level`: debug, info, warn or error", &logLevel)
	log, err := parseDaemon(a, f, o, args, &logLevel)
	if err != nil {
		return err
	}
	if nds < 1 || nds > 64 {
		return usageErrorf("dev", "--ds %d: want 1 to 64 data servers", nds)
	}
	opts := localcluster.Options{
		Dir: dir, DS: nds, MDSAddr: mdsAddr, RaftAddr: raftAddr, AdminAddr: adminAddr,
		DSAddrs: make([]string, nds), Log: log, DefaultLayout: defLayout,
	}
	if adminAddr == "off" || adminAddr == "" {
		opts.AdminAddr = "-"
	}
	tokenFile := ""
	if opts.AdminAddr != "-" {
		if opts.AdminToken, tokenFile, err = devToken(dir, adminToken); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
	}
	for i := range opts.DSAddrs {
		port := 0
		if dsPort != 0 {
			port = dsPort + i
		}
		opts.DSAddrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	relay := &nfs.Relay{}
	opts.Recall = relay
	c, err := localcluster.Start(startCtx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return fmt.Errorf("dev: %w", err)
	}
	ns, err := newNFS(log, &nf, c.MDSAddr(), c.Secret(), relay)
	if err == nil && ns != nil {
		err = ns.Start(ctx)
	}
	if err != nil {
		_ = c.Close()
		return fmt.Errorf("dev: nfs: %w", err)
	}
	printDev(a, c, opts.AdminToken, tokenFile)
	if ns != nil {
		fmt.Fprintf(a.stdout, "  nfs    %s (mount -t nfs4 -o vers=4.1,port=PORT HOST:/ DIR)\n", nf.addr)
	}
	<-ctx.Done()
	fmt.Fprintln(a.stdout, "strata dev: stopping")
	if ns != nil {
		_ = ns.Close() // syncs the files NFS clients hold open, while the cluster still runs
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("dev: stop: %w", err)
	}
	fmt.Fprintln(a.stdout, "strata dev: stopped")
	return nil
}

func printDev(a *app, c *localcluster.Cluster, token, tokenFile string) {
	w := a.stdout
	fmt.Fprintf(w, "strata dev: up, data in %s\n", c.Dir())
	fmt.Fprintf(w, "  mds    %s\n", c.MDSAddr())
	if c.AdminAddr() != "-" {
		fmt.Fprintf(w, "  admin  http://%s/v1/cluster\n", c.AdminAddr())
		where := ""
		if tokenFile != "" {
			where = ", kept in " + tokenFile
		}
		fmt.Fprintf(w, "  token  %s (the admin API's changes: curl -H \"Authorization: Bearer %s\" -X PUT --data-binary @policy.json http://%s/v1/qos/policy%s)\n",
			token, token, c.AdminAddr(), where)
	}
	for i := range c.NumDS() {
		fmt.Fprintf(w, "  %-6s %s\n", localcluster.DSID(i), c.DSAddr(i))
	}
	secret := filepath.Join(c.Dir(), "secret")
	fmt.Fprintf(w, "  secret %s", secret)
	if c.Dir() != devDir() {
		// root's client commands find the default one by themselves.
		fmt.Fprintf(w, " (export STRATA_SECRET_FILE=%s for client commands)", secret)
	}
	fmt.Fprintln(w)
	hint := "strata ls /"
	if c.MDSAddr() != "127.0.0.1:7000" {
		hint = "STRATA_MDS=" + c.MDSAddr() + " strata ls /"
	}
	fmt.Fprintf(w, "try: %s    (Ctrl-C or SIGTERM stops it)\n", hint)
}
