package fuse

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// helperEnv, when set, makes the test binary run a helper (a separate OS
// process doing I/O on a mount) instead of the tests.
const helperEnv = "STRATA_FUSE_TEST_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		if err := runHelper(h, os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper runs helper name with args PATH ID COUNT.
func runHelper(name string, args []string) error {
	path := args[0]
	id, err1 := strconv.Atoi(args[1])
	n, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("helper %s: bad arguments %q", name, args)
	}
	switch name {
	case "append":
		return appendRecords(path, id, n)
	case "range":
		return writeRange(path, id, n)
	case "unixconnect":
		return unixConnect(path, id)
	case "mmapsum":
		return mmapSum(path, n)
	}
	return fmt.Errorf("unknown helper %q", name)
}
