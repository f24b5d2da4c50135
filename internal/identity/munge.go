package identity

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// DefaultMungeSocket is munged's socket where the host's munge package
// puts it.
const DefaultMungeSocket = "/run/munge/munge.socket.2"

// SessionPayload is what a credential that opens a Strata session says,
// so that a credential minted for another service (Slurm's) does not open
// one.
const SessionPayload = "strata-session-v1"

// mungeTimeout bounds one munge or unmunge run.
const mungeTimeout = 10 * time.Second

// Munge talks to a munged through the munge and unmunge commands of the
// host's munge package (which use libmunge and munged's socket).
type Munge struct {
	Socket string // munged's socket; default DefaultMungeSocket
}

func (m Munge) socket() string {
	if m.Socket == "" {
		return DefaultMungeSocket
	}
	return m.Socket
}

// Encode returns a credential for this process's uid and gid carrying
// payload.
func (m Munge) Encode(ctx context.Context, payload string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, mungeTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "munge", "-S", m.socket(), "-s", payload)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: munge -S %s: %v: %s", ErrMunge, m.socket(), err, strings.TrimSpace(errb.String()))
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// MungeCred is what munged vouches for in a credential.
type MungeCred struct {
	Status  int // 0: success; 17 (EMUNGE_CRED_REPLAYED) a replay, ...
	Uid     uint32
	Gid     uint32
	Host    string // ENCODE_HOST: the address of the host that encoded it
	Payload []byte
}

// Decode asks munged to decode cred. A credential munged refuses
// (replayed, expired, forged, from another cluster's key) is an error
// wrapping ErrUnauthenticated.
func (m Munge) Decode(ctx context.Context, cred []byte) (*MungeCred, error) {
	ctx, cancel := context.WithTimeout(ctx, mungeTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "unmunge", "-S", m.socket(), "-N")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(cred), &out, &errb
	runErr := cmd.Run()
	if out.Len() == 0 {
		if runErr == nil {
			runErr = fmt.Errorf("no output")
		}
		return nil, fmt.Errorf("%w: MUNGE credential refused: %v: %s", ErrUnauthenticated, runErr, strings.TrimSpace(errb.String()))
	}
	mc, err := ParseUnmunge(out.Bytes())
	if err != nil {
		return nil, err
	}
	if mc.Status != 0 || runErr != nil {
		return nil, fmt.Errorf("%w: MUNGE credential refused (status %d: %s)", ErrUnauthenticated, mc.Status, mungeStatus(mc.Status))
	}
	return mc, nil
}

// mungeStatus names the munge error codes a user may meet.
func mungeStatus(code int) string {
	switch code {
	case 15:
		return "expired"
	case 16:
		return "rewound"
	case 17:
		return "replayed"
	case 14:
		return "invalid"
	case 0:
		return "ok"
	}
	return "munge error " + strconv.Itoa(code)
}

// ParseUnmunge parses the output of `unmunge -N`: "KEY: value" lines, a
// blank line, then the payload.
func ParseUnmunge(b []byte) (*MungeCred, error) {
	head, payload, ok := bytes.Cut(b, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("%w: unmunge output without a payload separator", ErrMalformed)
	}
	mc := &MungeCred{Status: -1, Payload: append([]byte(nil), payload...)}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(head))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("%w: unmunge line %q", ErrMalformed, sc.Text())
		}
		v = strings.TrimSpace(v)
		switch k {
		case "STATUS":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("%w: unmunge status %q", ErrMalformed, v)
			}
			mc.Status, seen = n, seen|1
		case "UID", "GID":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: unmunge %s %q", ErrMalformed, k, v)
			}
			if k == "UID" {
				mc.Uid, seen = uint32(n), seen|2
			} else {
				mc.Gid, seen = uint32(n), seen|4
			}
		case "ENCODE_HOST":
			mc.Host = v
		}
	}
	if seen != 7 {
		return nil, fmt.Errorf("%w: unmunge output lacks STATUS, UID or GID", ErrMalformed)
	}
	return mc, nil
}
