package fuse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/qos"
)

// jobFromCgroup returns the Slurm job id in a /proc/PID/cgroup listing:
// the digits of the last "job_<id>" path element, as Slurm's cgroup
// plugins (v1: /slurm/uid_U/job_J/step_S, v2: .../job_J/step_S) name it.
func jobFromCgroup(r io.Reader) (string, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, el := range strings.Split(parts[2], "/") {
			id, ok := strings.CutPrefix(el, "job_")
			if ok && id != "" && len(id) <= qos.MaxJobIDLen && strings.Trim(id, "0123456789") == "" {
				return id, true
			}
		}
	}
	return "", false
}

// jobOfPid returns the Slurm job of process pid, from its cgroup.
func jobOfPid(pid uint32) (string, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", false // gone, or not on this node's /proc
	}
	defer f.Close()
	return jobFromCgroup(f)
}

// tagOf returns the QoS tag of the FUSE request ctx: the calling
// process's Slurm job, class io; else the mount's default (Options.Tag).
func (fsys *fileSystem) tagOf(ctx context.Context) qos.Tag {
	if c, ok := gofuse.FromContext(ctx); ok && c.Pid != 0 {
		if job, ok := jobOfPid(c.Pid); ok {
			return qos.Tag{Job: job, Class: qos.ClassIO}
		}
	}
	return fsys.opts.Tag
}
