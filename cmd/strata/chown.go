package main

import (
	"context"
	"os/user"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/client"
)

func runChown(ctx context.Context, a *app, args []string) error {
	f := newFlags("chown", "OWNER[:GROUP] PATH...", `
Set the owner (and, with :GROUP, the group) of each PATH. OWNER and GROUP
are names or numeric ids; "OWNER:" leaves the group, ":GROUP" the owner.
Only root may give a file to another user; a file's owner may change its
group to one of the owner's groups. A change of owner or group clears the
setuid bit of a file, and its setgid bit when the group may execute it.`)
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, -1); err != nil {
		return err
	}
	own, grp, _ := strings.Cut(paths[0], ":")
	uid, gid := client.NoChange, client.NoChange
	if own != "" {
		if uid, err = lookupID(f, "user", own); err != nil {
			return err
		}
	}
	if grp != "" {
		if gid, err = lookupID(f, "group", grp); err != nil {
			return err
		}
	}
	if uid == client.NoChange && gid == client.NoChange {
		return usageErrorf(f.name, "%q names neither an owner nor a group", paths[0])
	}
	return chown(ctx, a, "chown", mds(), paths[1:], uid, gid)
}

func runChgrp(ctx context.Context, a *app, args []string) error {
	f := newFlags("chgrp", "GROUP PATH...", `
Set the group of each PATH; GROUP is a name or a numeric id. The owner of a
file may give it one of the owner's groups; root any group.`)
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 2, -1); err != nil {
		return err
	}
	gid, err := lookupID(f, "group", paths[0])
	if err != nil {
		return err
	}
	return chown(ctx, a, "chgrp", mds(), paths[1:], client.NoChange, gid)
}

func chown(ctx context.Context, a *app, cmd, mds string, paths []string, uid, gid uint32) error {
	return withClient(ctx, a, mds, func(c *client.Client) error {
		for _, arg := range paths {
			if err := c.Chown(ctx, strataPath(arg), uid, gid); err != nil {
				return opError(cmd, arg, err)
			}
		}
		return nil
	})
}

// lookupID resolves a user or group name (or a numeric id) on this machine,
// as chown(1) does.
func lookupID(f *cmdFlags, kind, s string) (uint32, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil && uint32(n) != client.NoChange {
		return uint32(n), nil
	}
	var id string
	if kind == "user" {
		u, err := user.Lookup(s)
		if err != nil {
			return 0, usageErrorf(f.name, "invalid user: %q", s)
		}
		id = u.Uid
	} else {
		g, err := user.LookupGroup(s)
		if err != nil {
			return 0, usageErrorf(f.name, "invalid group: %q", s)
		}
		id = g.Gid
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, usageErrorf(f.name, "%s %q has id %q, not a number", kind, s, id)
	}
	return uint32(n), nil
}
