// Package testcluster is the in-process cluster helper of the integration
// tests: an MDS and N data servers on 127.0.0.1 ports, data in t.TempDir,
// short Raft and heartbeat timeouts, stopped by t.Cleanup. It wraps
// localcluster, so the tests run the same daemons `strata dev` runs.
package testcluster
