package fuse

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fioResult is the part of fio's JSON output the test checks.
type fioResult struct {
	Jobs []struct {
		Name  string `json:"jobname"`
		Error int    `json:"error"`
		Read  struct {
			IOBytes int64   `json:"io_bytes"`
			BW      float64 `json:"bw_bytes"`
		} `json:"read"`
		Write struct {
			IOBytes int64   `json:"io_bytes"`
			BW      float64 `json:"bw_bytes"`
		} `json:"write"`
	} `json:"jobs"`
}

// TestFio runs Debian's fio on a mount with --verify=crc32c: sequential,
// random and mixed workloads, 4 KiB to 4 MiB blocks, buffered and
// O_DIRECT. fio checks every block it wrote when it reads it back.
func TestFio(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Skipf("SKIPPING FIO TEST: fio is not installed (apt install fio): %v", err)
	}
	_, s := startMount(t, 4)
	size := "32m"
	if testing.Short() {
		size = "16m"
	}
	tests := []struct {
		name string
		args []string
	}{
		{"seq-4k", []string{"--rw=write", "--bs=4k"}},
		{"seq-1m", []string{"--rw=write", "--bs=1m"}},
		{"seq-4m", []string{"--rw=write", "--bs=4m"}},
		{"seq-1m-direct", []string{"--rw=write", "--bs=1m", "--direct=1"}},
		{"rand-4k", []string{"--rw=randwrite", "--bs=4k"}},
		{"rand-64k", []string{"--rw=randwrite", "--bs=64k"}},
		{"rand-4k-4m", []string{"--rw=randwrite", "--bsrange=4k-4m"}},
		{"randrw-4k", []string{"--rw=randrw", "--bs=4k", "--rwmixread=50"}},
		{"randrw-16k-1m", []string{"--rw=randrw", "--bsrange=16k-1m", "--rwmixread=30"}},
		{"seq-4k-2jobs", []string{"--rw=write", "--bs=4k", "--numjobs=2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(s.Dir(), "fio-"+tc.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{
				"--name=" + tc.name, "--directory=" + dir, "--size=" + size,
				"--ioengine=psync", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1",
				"--output-format=json", "--group_reporting=0",
			}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, fio, args...)
			cmd.Dir = os.TempDir() // never a directory of the mount this process serves
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("fio %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.String(), out)
			}
			if strings.Contains(stderr.String(), "verify") {
				t.Errorf("fio reported verify problems:\n%s", stderr.String())
			}
			var r fioResult
			if err := json.Unmarshal(out[strings.IndexByte(string(out), '{'):], &r); err != nil {
				t.Fatalf("fio output: %v\n%s", err, out)
			}
			for _, j := range r.Jobs {
				if j.Error != 0 {
					t.Errorf("job %s: error %d", j.Name, j.Error)
				}
				if j.Write.IOBytes == 0 || j.Read.IOBytes == 0 {
					t.Errorf("job %s wrote %d and read (verified) %d bytes", j.Name, j.Write.IOBytes, j.Read.IOBytes)
				}
				t.Logf("%s: write %.0f MB/s (%d MiB), read+verify %.0f MB/s (%d MiB)", j.Name,
					j.Write.BW/1e6, j.Write.IOBytes>>20, j.Read.BW/1e6, j.Read.IOBytes>>20)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("remove: %v", err)
			}
		})
	}
}
