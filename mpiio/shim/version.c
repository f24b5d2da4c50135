/*
 * version.c - the Strata version this library was built as, for
 * `strata version` (cmd/strata/version.go reads the symbol from the ELF
 * file without loading it). The Makefile passes -DSTRATA_VERSION from
 * contrib/version.sh, the same string the strata binary carries.
 */
#ifndef STRATA_VERSION
#define STRATA_VERSION "dev"
#endif

__attribute__((visibility("default"))) const char strata_version[] = STRATA_VERSION;
