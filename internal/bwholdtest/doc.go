// Package bwholdtest holds what the tests of the drain-bandwidth
// controller (daemon/bwhold, `strata qos controller`) do to a real Slurm
// (internal/slurmtest): turn on job_submit.lua's hold for the controller,
// submit as an ordinary user, read what squeue shows, stop slurmrestd.
// It is for tests only and has no policy of its own.
package bwholdtest
