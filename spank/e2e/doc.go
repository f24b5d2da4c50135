// Package e2e tests spank_strata.so (the C SPANK plugin in the parent
// directory, built by `make spank`, documented in docs/slurm.md) loaded
// into a real multi-node Slurm started by internal/slurmtest, with a fake
// node agent speaking the socket protocol of jobtier.Hook*. It has no
// non-test code.
package e2e
