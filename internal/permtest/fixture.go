package permtest

import (
	"fmt"
	"os"
	"path/filepath"
)

// A fixture is one directory tree the operations of one caller run on:
//
//	X/          0755 root
//	  d/        the case's mode, owned by the owner and the shared group
//	    f_*     one file per operation, the case's mode, same owner
//	    sub_*   empty directories 0755 (rmdir, rename of a directory)
//	  e/        0777 root: where rename and link put things
//	    f_into  a file renamed into d
type fixCase struct {
	name     string
	dirMode  os.FileMode
	fileMode os.FileMode
}

// cases are the modes of d and of its files.
var cases = []fixCase{
	{"private", 0o755, 0o644},
	{"group-rw", 0o770, 0o660},
	{"closed", 0o700, 0o600},
	{"sticky", 0o1777 | os.ModeSticky, 0o666},
	{"setgid-dir", 0o2777 | os.ModeSetgid, 0o666},
	{"search-only", 0o711, 0o644},
	{"setid-files", 0o777, 0o6775 | os.ModeSetuid | os.ModeSetgid},
	{"read-only", 0o555, 0o444},
}

// files are the f_* entries of d, one per operation that changes a file.
var files = []string{
	"f_lookup", "f_openr", "f_openw", "f_write", "f_creat", "f_link", "f_unlink", "f_rename",
	"f_chmod", "f_chown", "f_chgrp", "f_trunc", "f_utnow", "f_utset", "f_xuser", "f_xtrusted", "f_xsecurity",
}

// build makes fixture x for case fc, owned by uid and gid.
func build(x string, fc fixCase, uid, gid int) error {
	d, e := filepath.Join(x, "d"), filepath.Join(x, "e")
	for _, p := range []string{x, d, e, filepath.Join(d, "sub_rmdir"), filepath.Join(d, "sub_rename")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	for _, p := range append(prefix(d, files), filepath.Join(e, "f_into")) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	for _, p := range append(prefix(d, files), filepath.Join(e, "f_into"), filepath.Join(d, "sub_rmdir"), filepath.Join(d, "sub_rename"), d) {
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	for _, p := range prefix(d, files) {
		if err := os.Chmod(p, fc.fileMode); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(e, "f_into"), 0o644); err != nil {
		return err
	}
	if err := os.Chmod(e, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(d, fc.dirMode); err != nil {
		return fmt.Errorf("chmod %s: %w", d, err)
	}
	return nil
}

func prefix(dir string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// watched are the entries whose mode, owner and group after the operations
// must also be the kernel's: what create, mkdir, chmod, chown, chgrp and
// write leave (setgid directories, bits cleared).
var watched = []string{"d/new_file", "d/new_readonly", "d/new_dir", "d/f_chmod", "d/f_chown", "d/f_chgrp", "d/f_write"}
