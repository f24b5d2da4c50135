// Package logging builds the one structured logger every Strata daemon
// logs through: log/slog text lines at a level (debug, info, warn, error;
// the log_level key), with warnings and errors that repeat rate-limited,
// and an adapter for libraries that log with Printf (fasthttp) so that
// their lines are structured and rate-limited too.
//
// It imports nothing of Strata; the daemons receive a *slog.Logger in
// their Deps and never build one themselves: only cmd/strata calls New.
package logging
