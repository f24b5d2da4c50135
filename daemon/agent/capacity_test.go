package agent

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/jobtier"
)

func TestReserveCapacity(t *testing.T) {
	dir := t.TempDir()
	s := &Server{cfg: Config{Node: "n1", NVMeDir: dir}, tiers: map[uint32]*tier{}}
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		t.Fatal(err)
	}
	free := sf.Bavail * uint64(sf.Bsize)
	if free < 1<<20 {
		t.Skip("less than 1 MiB free here")
	}
	a := &tier{data: filepath.Join(dir, "job-1"), st: tierState{Job: 1, Phase: phaseRunning}}
	s.tiers[1] = a
	got, err := s.reserveCapacity(a, free/2)
	if err != nil || got != free/2 || !a.reserved {
		t.Fatalf("half the free space: %d, %v (reserved %v)", got, err, a.reserved)
	}
	a.st.Capacity = got
	b := &tier{data: filepath.Join(dir, "job-2"), st: tierState{Job: 2, Phase: phaseAssembling}}
	s.tiers[2] = b
	// Another half does not fit next to a's promise (whatever else the
	// file system does meanwhile, it has no more free space than before).
	_, err = s.reserveCapacity(b, free/2+free/4)
	if !isJobError(err) || !strings.Contains(err.Error(), "does not fit on node n1") || !strings.Contains(err.Error(), "promised to the tiers of jobs [1] already there") {
		t.Errorf("a second tier over the free space: %v", err)
	}
	if b.reserved {
		t.Error("a tier that does not fit is reserved")
	}
	if _, err := s.reserveCapacity(b, 1000<<40); err == nil || !strings.Contains(err.Error(), "capacity 1000T per node does not fit") {
		t.Errorf("1000T: %v", err)
	}
	// A failed tier promises nothing.
	a.st.Phase = phaseFailed
	if _, err := s.reserveCapacity(b, free/2+free/4); err != nil {
		t.Errorf("next to a failed tier (which promises nothing): %v", err)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 1023: "1023", 1024: "1K", 300 << 20: "300M", 1000 << 40: "1000T", 1536 << 20: "1.5G"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStageErrNamesTheFile(t *testing.T) {
	loc := jobtier.Location{Path: "/data"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "/data/sub/secret", Err: syscall.EACCES}, "stage-in source /data: /data/sub/secret: permission denied"},
		{&fs.PathError{Op: "stat", Path: "/data", Err: syscall.ENOENT}, "stage-in source /data: no such file or directory"},
		{&fs.PathError{Op: "stat", Path: "/", Err: syscall.EACCES}, "stage-in source /data: permission denied"},
		{errors.New("not a regular file or directory"), "stage-in source /data: not a regular file or directory"},
	} {
		if got := stageErr(loc, tc.err); !isJobError(got) || got.Error() != tc.want {
			t.Errorf("stageErr(%v) = %v, want %q", tc.err, got, tc.want)
		}
	}
}

func TestJobStates(t *testing.T) {
	for _, tc := range []struct {
		state       string
		runs, ended bool
	}{{"RUNNING", true, false}, {"PENDING", true, false}, {"COMPLETING", false, false}, {"CANCELLED", false, true}, {"COMPLETED", false, true}, {"", false, true}, {"TIMEOUT", false, true}} {
		if jobRuns(tc.state) != tc.runs || jobEnded(tc.state) != tc.ended {
			t.Errorf("%q: runs %v ended %v, want %v %v", tc.state, jobRuns(tc.state), jobEnded(tc.state), tc.runs, tc.ended)
		}
	}
}
