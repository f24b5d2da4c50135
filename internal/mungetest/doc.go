// Package mungetest starts a real munged for a test: its own key and
// socket in a short directory under /tmp, stopped by PID when the test
// ends. munged comes from the munge package, which contrib/test-deps.sh
// installs; a test that needs it fails, not skips, without it.
//
// It imports only the standard library and testing.
package mungetest
