// Package agent is the compute-node agent, `strata agent`: it builds,
// serves and tears down job tiers (ARCHITECTURE.md, "Job tier
// lifecycle"). The SPANK plugin calls it over a root-only unix socket in
// each job's prolog and epilog and when a step starts (jobtier.Hook*,
// docs/slurm.md); it answers one JSON line per connection.
//
// Per job tier, on every node of the job, it runs this same binary's
// daemons as separate processes: `strata ds` on the node's NVMe directory
// (capacity as the spec asks), `strata mds` on the first node of the
// allocation (one voter, ports derived from the job id so that every node
// finds it without talking), and `strata mount` at the same path on every
// node, owned by the job's user. It stages data in (the files spread over
// the nodes by size, every copy checksummed with CRC32C and read back),
// drains files that match the job's drain rules to the global namespace
// while the job runs and at its end (first node), and reports each tier to
// the global MDS's tier registry. The state of each tier is a JSON file
// under StateDir, so that an agent restarted mid-job re-adopts its tiers:
// the daemons are not its children for life (own process groups), only
// their PIDs are.
//
// It imports the client library and the FUSE package's unmount helper,
// jobtier and daemon/rpc; it must not import another daemon (mds, ds,
// admin), which it runs as processes.
package agent
