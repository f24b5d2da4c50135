package mds

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// A command is one raft log entry: a type byte, then the payload struct
// encoded with rpc.Marshal. The leader fills in everything that is not
// deterministic (Now, a new file's placed Layout) before raft.Apply; the
// FSM validates the command against its state and applies it.
//
// Type numbers are persisted in raft logs: never renumber or reuse one.
// A type with cmdIgnorable set is skipped by a binary that does not know
// it (nomad's IgnoreUnknownTypeFlag), so a new, optional command can be
// rolled out before every replica is upgraded. Every other unknown type, and
// any payload that does not decode, makes Apply panic: a replica that
// skipped an entry it should have applied would silently diverge.
type cmdType uint8

// cmdIgnorable marks a command type that may be skipped when unknown.
const cmdIgnorable cmdType = 0x80

// The command types.
const (
	cmdInit        cmdType = 1                 // initCmd
	cmdCreate      cmdType = 2                 // createCmd
	cmdMkdir       cmdType = 3                 // mkdirCmd
	cmdSymlink     cmdType = 4                 // symlinkCmd
	cmdLink        cmdType = 5                 // linkCmd
	cmdUnlink      cmdType = 6                 // entryCmd
	cmdRmdir       cmdType = 7                 // entryCmd
	cmdRename      cmdType = 8                 // renameCmd
	cmdSetattr     cmdType = 9                 // setattrCmd
	cmdSetXattr    cmdType = 10                // xattrCmd
	cmdRemoveXattr cmdType = 11                // xattrCmd
	cmdRelayout    cmdType = 12                // relayoutCmd
	cmdCommit      cmdType = 13                // commitCmd
	cmdRegisterDS  cmdType = 14                // registerCmd
	cmdPurge       cmdType = 15                // purgeCmd
	cmdBatch       cmdType = 16                // batchCmd
	cmdLockSet     cmdType = 17                // lockCmd
	cmdLockRelease cmdType = 18                // lockCmd
	cmdSessionDrop cmdType = 19                // sessionCmd
	cmdMDSAddr     cmdType = 20 | cmdIgnorable // mdsAddrCmd: optional, an old binary may skip it
	cmdTierPut     cmdType = 21 | cmdIgnorable // tierPutCmd (tiers.go): optional, an old binary may skip it

	// Failure handling (repairstate.go). Stale marks, rebuild swaps and
	// drains change what clients read: an old binary must not skip them.
	cmdStale           cmdType = 22                // staleCmd
	cmdRebuildStart    cmdType = 23                // rebuildStartCmd
	cmdRebuildDone     cmdType = 24                // rebuildDoneCmd
	cmdRebuildAbort    cmdType = 25                // rebuildAbortCmd
	cmdRepairForget    cmdType = 26                // repairForgetCmd
	cmdDrain           cmdType = 27                // drainCmd
	cmdStrayPurge      cmdType = 28                // strayPurgeCmd
	cmdDamaged         cmdType = 29 | cmdIgnorable // damagedCmd: scrub's findings, an old binary may skip them
	cmdGrantHorizon    cmdType = 30                // grantHorizonCmd (stale.go)
	cmdRebuildProgress cmdType = 31 | cmdIgnorable // rebuildProgressCmd: optional, an old binary may skip it
	cmdRebuildReset    cmdType = 32 | cmdIgnorable // rebuildResetCmd: optional, an old binary may skip it

	// Quotas (quota.go): they refuse changes, an old binary must not skip them.
	cmdQuotaSet cmdType = 33 // quotaSetCmd
	cmdProject  cmdType = 34 // projectCmd

	// The QoS policy (qos.go): data servers schedule by it, an old binary
	// must not skip it.
	cmdQoSPolicy cmdType = 35 // qosPolicyCmd

	// Special files (mknod.go): they add inodes, an old binary must not skip them.
	cmdMknod cmdType = 36 // mknodCmd

	// Inline files: cmdInlineWrite (37) and cmdInlineSpill (38), inline.go.
)

// errUnknownCommand is wrapped when a log entry has a type this binary does
// not know and may not skip.
var errUnknownCommand = errors.New("mds: unknown command type")

// initCmd stamps the root directory's times once, after bootstrap.
type initCmd struct {
	Now int64
}

// createCmd creates a regular file, or with Exclusive unset returns an
// existing one. Layout is placed by the leader; its Generation is set by
// the FSM.
type createCmd struct {
	Parent    uint64
	Name      string
	Mode      uint32
	Uid       uint32
	Gid       uint32
	Exclusive bool
	Layout    layout.Layout
	Now       int64
	Inline    bool // a new file keeps its bytes in the MDS (inline.go); appended later
}

// mkdirCmd creates a directory.
type mkdirCmd struct {
	Parent uint64
	Name   string
	Mode   uint32
	Uid    uint32
	Gid    uint32
	Now    int64
}

// symlinkCmd creates a symbolic link.
type symlinkCmd struct {
	Parent uint64
	Name   string
	Target string
	Uid    uint32
	Gid    uint32
	Now    int64
}

// linkCmd adds a hard link.
type linkCmd struct {
	Ino       uint64
	NewParent uint64
	NewName   string
	Now       int64
}

// entryCmd removes a directory entry (unlink, rmdir).
type entryCmd struct {
	Parent uint64
	Name   string
	Now    int64
}

// renameCmd is rename(2) with renameat2(2) flags.
type renameCmd struct {
	OldParent uint64
	OldName   string
	NewParent uint64
	NewName   string
	Flags     uint32
	Now       int64
}

// setattrCmd changes the attributes whose bit is in Req.Valid.
type setattrCmd struct {
	Req rpc.SetattrReq
	Now int64
}

// xattrCmd sets or removes an extended attribute; on a directory the
// layout xattr sets or removes its policy.
type xattrCmd struct {
	Ino   uint64
	Name  string
	Value []byte
	Flags uint32
	Now   int64
}

// relayoutCmd gives an empty file a new layout, placed by the leader; the
// FSM bumps the generation and queues the old components for collection.
type relayoutCmd struct {
	Ino    uint64
	Layout layout.Layout
	Now    int64
}

// commitCmd publishes a writer's durable size and mtime (LAYOUTCOMMIT).
// KillPriv (appended later: false in older entries) sets the permission
// bits to Mode: a writer that is not root cleared the setuid and setgid
// bits, as a local file system does at a write.
type commitCmd struct {
	Ino      uint64
	Gen      uint64
	End      uint64
	Mtime    int64
	Now      int64
	KillPriv bool
	Mode     uint32
}

// registerCmd adds a data server to the registry or changes its address
// or node.
type registerCmd struct {
	ID   string
	Addr string
	Node string
	Rack string // appended later: empty in older entries
}

// purgeCmd drops orphans whose components are gone from every data server.
type purgeCmd struct {
	Orphans []orphanKey
}

// batchCmd carries several commands in one raft entry (group commit, see
// proposer.go). Each is applied in order with its own result, exactly as
// if it had been an entry of its own; batches do not nest.
type batchCmd struct {
	Cmds [][]byte

	subs []decoded // Cmds decoded, filled in by decodeCommand
}

// batchResult is what Apply returns for a batch: one result per command.
type batchResult []result

// newPayload returns a pointer to the zero payload of type t, or nil if
// the type is unknown.
func newPayload(t cmdType) any {
	switch t {
	case cmdInit:
		return new(initCmd)
	case cmdCreate:
		return new(createCmd)
	case cmdMkdir:
		return new(mkdirCmd)
	case cmdSymlink:
		return new(symlinkCmd)
	case cmdMknod:
		return new(mknodCmd)
	case cmdLink:
		return new(linkCmd)
	case cmdUnlink, cmdRmdir:
		return new(entryCmd)
	case cmdRename:
		return new(renameCmd)
	case cmdSetattr:
		return new(setattrCmd)
	case cmdSetXattr, cmdRemoveXattr:
		return new(xattrCmd)
	case cmdRelayout:
		return new(relayoutCmd)
	case cmdCommit:
		return new(commitCmd)
	case cmdRegisterDS:
		return new(registerCmd)
	case cmdPurge:
		return new(purgeCmd)
	case cmdBatch:
		return new(batchCmd)
	case cmdLockSet, cmdLockRelease:
		return new(lockCmd)
	case cmdSessionDrop:
		return new(sessionCmd)
	case cmdMDSAddr:
		return new(mdsAddrCmd)
	case cmdTierPut:
		return new(tierPutCmd)
	case cmdQuotaSet:
		return new(quotaSetCmd)
	case cmdProject:
		return new(projectCmd)
	case cmdQoSPolicy:
		return new(qosPolicyCmd)
	case cmdInlineWrite:
		return new(inlineWriteCmd)
	case cmdInlineSpill:
		return new(inlineSpillCmd)
	}
	return newRepairPayload(t)
}

// encodeCommand returns the log entry of a command: t, then payload (a
// pointer to the payload struct of t).
func encodeCommand(t cmdType, payload any) []byte {
	if c, ok := payload.(*createCmd); ok {
		return appendCreate(append(make([]byte, 0, createSize(c)), byte(t)), c)
	}
	return rpc.Marshal(append(make([]byte, 0, 96), byte(t)), payload)
}

// decodeCommand decodes a log entry into its type and payload. An unknown
// type with cmdIgnorable set decodes to a nil payload and no error: the
// caller skips it. Any other unknown type or undecodable payload is an
// error; Apply panics on it.
func decodeCommand(b []byte) (cmdType, any, error) {
	return decodeCommandNames(b, nil)
}

// decodeCommandNames is decodeCommand sharing data server ids through
// names (nil: none shared).
func decodeCommandNames(b []byte, names targetNames) (cmdType, any, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("%w: empty entry", rpc.ErrDecode)
	}
	t := cmdType(b[0])
	p := newPayload(t)
	if p == nil {
		if t&cmdIgnorable != 0 {
			return t, nil, nil
		}
		return t, nil, fmt.Errorf("%w %d", errUnknownCommand, t)
	}
	if bc, ok := p.(*batchCmd); ok {
		if err := bc.decode(b[1:]); err != nil {
			return t, nil, fmt.Errorf("decode command %d: %w", t, err)
		}
		bc.subs = make([]decoded, len(bc.Cmds))
		for i, c := range bc.Cmds {
			st, sp, err := decodeCommandNames(c, names)
			switch {
			case err != nil:
				return t, nil, fmt.Errorf("batch command %d: %w", i, err)
			case st == cmdBatch:
				return t, nil, fmt.Errorf("%w: batch command %d is a batch", rpc.ErrDecode, i)
			}
			bc.subs[i] = decoded{t: st, p: sp}
		}
		return t, p, nil
	}
	var err error
	if c, ok := p.(*createCmd); ok {
		err = decodeCreate(b[1:], c, names)
	} else {
		err = rpc.Unmarshal(b[1:], p)
	}
	if err != nil {
		return t, nil, fmt.Errorf("decode command %d: %w", t, err)
	}
	return t, p, nil
}

// encodeBatch returns the log entry of a batch of encoded commands: the
// encoding rpc.Marshal gives a batchCmd (a count, then each command's
// length and bytes), written in one allocation.
func encodeBatch(cmds [][]byte) []byte {
	n := 1 + binary.MaxVarintLen64
	for _, c := range cmds {
		n += binary.MaxVarintLen64 + len(c)
	}
	b := append(make([]byte, 0, n), byte(cmdBatch))
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

// decode reads a batch's payload as rpc.Unmarshal would, except that
// Cmds are slices of b, not copies: the commands are decoded from them at
// once and not kept.
func (bc *batchCmd) decode(b []byte) error {
	if len(b) == 0 {
		return nil // as rpc.Unmarshal: an empty payload leaves Cmds nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return fmt.Errorf("%w: batchCmd.Cmds: bad count", rpc.ErrDecode)
	}
	b = b[k:]
	if n == 0 {
		if len(b) != 0 {
			return fmt.Errorf("%w: %d trailing bytes", rpc.ErrDecode, len(b))
		}
		return nil
	}
	bc.Cmds = make([][]byte, n)
	for i := range bc.Cmds {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return fmt.Errorf("%w: batchCmd.Cmds: bad length of command %d", rpc.ErrDecode, i)
		}
		if l > 0 {
			bc.Cmds[i] = b[k : k+int(l) : k+int(l)]
		}
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", rpc.ErrDecode, len(b))
	}
	return nil
}
