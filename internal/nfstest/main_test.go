package nfstest_test

import (
	"os"
	"testing"

	"github.com/strata-hpc/strata/internal/nfstest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	nfstest.Cleanup()
	os.Exit(code)
}
