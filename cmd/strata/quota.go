package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

func runQuota(ctx context.Context, a *app, args []string) error {
	f := newFlags("quota", "[-u USER | -p PROJECT] | set (-u USER | -p PROJECT) [--bytes SIZE] [--inodes N] | project PROJECT PATH...", `
Show or set quotas, like 'lfs quota': the bytes and inodes a user (the
owner of files) or a project (an id every file and directory carries,
inherited from the directory it is created in) uses, and its limits. With
no flag, the calling user's. A create, mkdir or symlink past an inode
limit, and a write (through the mount), close or fsync that grows a file
past a byte limit, fail with "Disk quota exceeded" (EDQUOT).
"set" (root only) sets the limits; 0 is none, both 0 removes the quota.
"project ID PATH..." (root only) gives each PATH the project ID: a
directory's new files and subdirectories inherit it.`)
	mds := f.mdsFlag(a)
	user := f.String("u", "", "a `user`: name or numeric id")
	project := f.String("p", "", "a `project`: numeric id")
	bytesFlag := f.String("bytes", "", "set: the byte limit, a `size` like 10G; 0 for none")
	inodesFlag := f.String("inodes", "", "set: the inode limit, a `number`; 0 for none")
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	verb := ""
	if len(rest) > 0 {
		verb, rest = rest[0], rest[1:]
	}
	switch verb {
	case "project":
		if len(rest) < 2 {
			return usageErrorf(f.name, "want: project PROJECT PATH...")
		}
		id, err := strconv.ParseUint(rest[0], 10, 32)
		if err != nil {
			return usageErrorf(f.name, "project %q: want a number", rest[0])
		}
		return withClient(ctx, a, mds(), func(c *client.Client) error {
			for _, p := range rest[1:] {
				if err := c.SetProject(ctx, p, uint32(id)); err != nil {
					return err
				}
			}
			return nil
		})
	case "", "set":
	default:
		return usageErrorf(f.name, "unknown %q: want set or project, or no argument", verb)
	}
	if len(rest) > 0 {
		return usageErrorf(f.name, "unexpected %q", rest[0])
	}
	kind, id, err := quotaTarget(f, *user, *project)
	if err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		var r *rpc.QuotaResp
		if verb == "set" {
			if *bytesFlag == "" && *inodesFlag == "" {
				return usageErrorf(f.name, "set: give --bytes, --inodes or both")
			}
			cur, err := c.Quota(ctx, kind, id)
			if err != nil {
				return err
			}
			b, n := cur.BytesLimit, cur.InodesLimit
			if *bytesFlag != "" {
				v, err := layout.ParseSize(*bytesFlag)
				if err != nil || v < 0 {
					return usageErrorf(f.name, "--bytes %q: want a size like 10G", *bytesFlag)
				}
				b = uint64(v)
			}
			if *inodesFlag != "" {
				v, err := strconv.ParseUint(*inodesFlag, 10, 64)
				if err != nil {
					return usageErrorf(f.name, "--inodes %q: want a number", *inodesFlag)
				}
				n = v
			}
			if r, err = c.SetQuota(ctx, kind, id, b, n); err != nil {
				return err
			}
		} else if r, err = c.Quota(ctx, kind, id); err != nil {
			return err
		}
		printQuota(a, r)
		return nil
	})
}

// quotaTarget returns the user or project the flags name, or the caller.
func quotaTarget(f *cmdFlags, user, project string) (uint8, uint32, error) {
	switch {
	case user != "" && project != "":
		return 0, 0, usageErrorf(f.name, "give -u or -p, not both")
	case project != "":
		id, err := strconv.ParseUint(project, 10, 32)
		if err != nil {
			return 0, 0, usageErrorf(f.name, "-p %q: want a number", project)
		}
		return rpc.QuotaProject, uint32(id), nil
	case user != "":
		id, err := lookupID(f, "user", user)
		return rpc.QuotaUser, id, err
	}
	return rpc.QuotaUser, uint32(os.Getuid()), nil
}

// printQuota prints a quota as lfs quota does: use and limits, "-" for none.
func printQuota(a *app, r *rpc.QuotaResp) {
	what := "user"
	if r.Kind == rpc.QuotaProject {
		what = "project"
	}
	limit := func(v uint64, size bool) string {
		switch {
		case v == 0:
			return "-"
		case size:
			return layout.FormatSize(int64(v))
		}
		return strconv.FormatUint(v, 10)
	}
	fmt.Fprintf(a.stdout, "Disk quotas for %s %d:\n", what, r.ID)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  BYTES\tLIMIT\tINODES\tLIMIT")
	fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", layout.FormatSize(int64(r.Bytes)), limit(r.BytesLimit, true), r.Inodes, limit(r.InodesLimit, false))
	_ = tw.Flush()
}
