// Package slurmrest is a small typed client for slurmrestd's OpenAPI
// v0.0.38 (Slurm 22.05): ping, diag, jobs, one job and its update (hold,
// release, comment), nodes and licenses. It replaces github.com/ubccr/slurmrest,
// which cannot be downloaded here, and covers only what Strata uses.
//
// It talks to slurmrestd either over a unix socket with rest_auth/local
// (the kernel tells slurmrestd who the caller is; Slurm's RPCs then run as
// slurmrestd's own user) or over TCP with rest_auth/jwt (X-SLURM-USER-NAME
// and X-SLURM-USER-TOKEN on every request). Every request has a timeout
// and every response a size bound; a failure is an *Error carrying the
// HTTP status and slurm's own error text.
//
// It imports only the standard library, and nothing of Strata's daemons.
package slurmrest
