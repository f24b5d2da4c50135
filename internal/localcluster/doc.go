// Package localcluster runs a whole Strata in one process: one MDS, N data
// servers and the admin API on loopback, data under one directory. It is
// what `strata dev` starts and what the test cluster helper wraps; the
// daemons are the same ones `strata mds` and `strata ds` run.
package localcluster
