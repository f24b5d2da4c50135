package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// usageError is a command line that cannot run: exit status 2.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string {
	if e.cmd == "" {
		return e.msg
	}
	return fmt.Sprintf("%s: %s (see 'strata %s --help')", e.cmd, e.msg, e.cmd)
}

func usageErrorf(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// unreachableError is a client command that could not reach its MDS.
type unreachableError struct {
	addr string
	err  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the MDS at %s (start one with 'strata dev', or point --mds or STRATA_MDS at one): %v", e.addr, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// opError names what failed the way a shell tool does: the command and the
// path it failed on. If err carries a path error (from the client library
// or the os package), its path is kept: it names the file that failed,
// which in a recursive command may be below the argument.
func opError(cmd, path string, err error) error {
	if err == nil {
		return nil
	}
	var ue *unreachableError
	if errors.As(err, &ue) {
		return ue
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		path, err = pe.Path, pe.Err
	}
	return &fs.PathError{Op: cmd, Path: path, Err: err}
}

// opErrorAt is opError naming label (e.g. "SRC DST") instead of a path.
func opErrorAt(cmd, label string, err error) error {
	e := opError(cmd, label, err)
	if pe, ok := e.(*fs.PathError); ok {
		pe.Path = label
	}
	return e
}

// describe formats err as the one line the CLI prints after "strata: ".
// A POSIX error shows its standard text ("no such file or directory"),
// followed by the server's detail in parentheses when that adds something.
func describe(err error) string {
	var ue *unreachableError
	if errors.As(err, &ue) {
		return oneLine(ue.Error())
	}
	var ul *usageError
	if errors.As(err, &ul) {
		return oneLine(ul.Error())
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return oneLine(pe.Op + " " + pe.Path + ": " + reason(pe.Err))
	}
	return oneLine(reason(err))
}

// reason is the part of an error message after the command and path.
func reason(err error) string {
	var re *rpc.Error
	if errors.As(err, &re) {
		std := re.ErrnoValue().Error()
		if re.Msg == "" || strings.Contains(re.Msg, std) {
			return std
		}
		return std + " (" + re.Msg + ")"
	}
	if errors.Is(err, layout.ErrInvalid) {
		return "invalid layout: " + strings.TrimPrefix(err.Error(), layout.ErrInvalid.Error()+": ")
	}
	return err.Error()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if p := printable(s); p != s {
		return p[1 : len(p)-1] // escaped, without the quotes
	}
	return s
}
