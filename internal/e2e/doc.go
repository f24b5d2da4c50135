// Package e2e tests job tiers end to end (issue "Job-scoped tiers"): a
// real multi-node Slurm with the real SPANK plugin, a real `strata agent`
// process per node and a global namespace of real strata processes, all
// started by internal/tiertest. It has no non-test code.
package e2e
