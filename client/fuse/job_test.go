package fuse

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/qos"
)

func TestJobFromCgroup(t *testing.T) {
	for _, tc := range []struct{ name, listing, want string }{
		{"slurm cgroup v1", "12:freezer:/slurm/uid_1000/job_4242/step_0\n11:memory:/slurm/uid_1000/job_4242/step_0/task_0\n", "4242"},
		{"slurm cgroup v2", "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n", "77"},
		{"no job", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"not a job id", "0::/x/job_abc/step_0\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := jobFromCgroup(strings.NewReader(tc.listing))
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("job %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

// TestMountTagsCallerJob: a process in a Slurm job's cgroup reads a file
// through the mount, and the data server serves it as that job's io; a
// process outside any job is served under the mount's default tag.
func TestMountTagsCallerJob(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 1)
	opts := DefaultOptions()
	opts.Tag = qos.Tag{Job: "mount-default", Class: qos.ClassIO}
	m := mountCluster(t, cl, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := bytes.Repeat([]byte("j"), 1<<20)
	c := cl.Client()
	for _, name := range []string{"/in-job", "/no-job"} {
		f, err := c.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A cgroup named as Slurm names a job's (cgroup v1 freezer hierarchy,
	// which slurmd uses too).
	cg := filepath.Join("/sys/fs/cgroup/freezer", fmt.Sprintf("strata-test-%d", os.Getpid()), "job_4242")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatalf("make a job cgroup: %v", err)
	}
	defer os.Remove(filepath.Dir(cg))
	defer os.Remove(cg)
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec cat %s/in-job > /dev/null", cg, m.Dir())
	if out, err := exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("read in job 4242: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "cat", filepath.Join(m.Dir(), "no-job")).Output(); err != nil || len(out) != len(data) {
		t.Fatalf("read outside a job: %v (%d bytes)", err, len(out))
	}
	served := map[string]int64{}
	for _, j := range cl.DS(0).QoSStats().Jobs {
		if j.Class == "io" {
			served[j.Job] += j.Served
		}
	}
	if served["4242"] < int64(len(data)) || served["mount-default"] < int64(len(data)) {
		t.Fatalf("served io bytes by job %v, want >= %d for 4242 and mount-default", served, len(data))
	}
}
