package agent

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// umask sets the process's file mode mask and returns the old one (the
// socket is created with no group or other bits at all).
func umask(m int) int { return unix.Umask(m) }

// checkPeerRoot refuses a connection whose peer is not root. The socket's
// mode already keeps others out; this keeps them out if an administrator
// loosens it.
func checkPeerRoot(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("strata agent: not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("strata agent: peer credentials: %w", cerr)
	}
	if cred.Uid != 0 {
		return fmt.Errorf("strata agent: only root (the SPANK plugin) may call the agent, not uid %d", cred.Uid)
	}
	return nil
}

// socketAnswers reports whether an agent accepts connections on the
// socket at path.
func socketAnswers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
