package nfs

import (
	"errors"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// statusOf translates an error of the client library to an nfsstat4.
func statusOf(err error) uint32 {
	if err == nil {
		return nfs4OK
	}
	if errors.Is(err, rpc.ErrUnavailable) {
		return nfs4errDelay
	}
	switch rpc.ToErrno(err) {
	case syscall.EPERM:
		return nfs4errPerm
	case syscall.ENOENT:
		return nfs4errNoent
	case syscall.EACCES:
		return nfs4errAccess
	case syscall.EEXIST:
		return nfs4errExist
	case syscall.EXDEV:
		return nfs4errXdev
	case syscall.ENOTDIR:
		return nfs4errNotdir
	case syscall.EISDIR:
		return nfs4errIsdir
	case syscall.EINVAL:
		return nfs4errInval
	case syscall.EFBIG:
		return nfs4errFbig
	case syscall.ENOSPC:
		return nfs4errNospc
	case syscall.EROFS:
		return nfs4errRofs
	case syscall.EMLINK:
		return nfs4errMlink
	case syscall.ENAMETOOLONG:
		return nfs4errNametoolong
	case syscall.ENOTEMPTY:
		return nfs4errNotempty
	case syscall.EDQUOT:
		return nfs4errDquot
	case syscall.ESTALE:
		return nfs4errStale
	case syscall.EAGAIN, syscall.EBUSY, syscall.ETIMEDOUT:
		return nfs4errDelay
	case syscall.ENXIO:
		return nfs4errNxio
	}
	return nfs4errIO
}
