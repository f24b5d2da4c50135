// Package slurmtest starts a real multi-node Slurm for a test: it runs
// contrib/devcluster/up.sh (munge, slurmctld, N slurmd in network
// namespaces or on 127.0.0.1 ports, optionally slurmrestd) in a short
// directory of its own under /tmp, with Strata's SPANK plugin loaded, and
// tears it down by PID with down.sh when the test ends. Cluster runs the
// Slurm commands (sbatch, srun, salloc, squeue, scontrol, sinfo) against it.
//
// Tests that use it skip, loudly, only when Slurm is missing and cannot
// be installed (or the test does not run as root), and under -short.
package slurmtest
