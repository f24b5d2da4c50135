// Package chaos is the fault-injection harness of Strata's tests: it runs
// an in-process cluster (three MDS voters and eight data servers by
// default, internal/localcluster) and, on a schedule drawn from a seed
// (math/rand/v2 PCG), kills and restarts MDS voters (the leader or any) and
// data servers, and restarts data servers at once (a blip), while
// writers create, overwrite and read files in every scheme (none,
// mirror:2, rs:4+2). A stopped node is how a crash and a partition of
// that node from everyone else look to the rest of the cluster; partial
// (asymmetric) partitions are not modelled.
//
// At the end every stopped node is started again, and the run checks what
// a user would notice: no read during the faults returned wrong bytes,
// every file's layout is healthy again (no stale component, none on a
// data server that is down), and every acknowledged write reads back
// byte-exact. The seed fixes the schedule (which faults, on which nodes,
// in which order, after which pauses) and what the writers write; thread
// timing is not replayable, so a replay (STRATA_CHAOS_SEED) injects the
// same faults, not the same interleaving.
//
// It imports the client and internal/localcluster; only tests import it.
package chaos
