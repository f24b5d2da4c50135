package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/strata-hpc/strata/internal/nfstest"
)

// helperEnv, when set, makes the test binary run a helper (a separate OS
// process doing metadata operations on a mount, mountmeta_test.go)
// instead of the benchmarks.
const helperEnv = "STRATA_BENCH_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		if err := runMetaHelper(h, os.Args[len(os.Args)-2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	nfstest.Cleanup()
	os.Exit(code)
}
