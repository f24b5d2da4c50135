package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/layout"
)

// minMemoryLimit is the smallest memory_limit a daemon takes: below it the
// collector would run all the time for the daemon's own working set.
const minMemoryLimit = 64 << 20

// memoryLimit is a daemon's soft memory limit (runtime/debug.SetMemoryLimit):
// the heap size at which the Go runtime collects garbage however little
// the heap grew since the last collection. The request-body budgets bound
// the bodies alive at once; the limit has the ones done with collected
// before the process grows past it.
type memoryLimit struct {
	bytes int64 // > 0: this limit
	off   bool  // no limit (the Go default)
}

// memoryLimitOption declares the memory_limit key: a size, "auto" (the
// default) or "off".
func memoryLimitOption(o *options, m *memoryLimit) {
	o.add("memory_limit", "soft memory limit (a `size`) at which garbage is collected whatever GOGC says; \"auto\": GOMEMLIMIT if set, else 3/4 of the cgroup's memory.max or of the RAM; \"off\": none", "auto", func(v string) error {
		switch v = strings.TrimSpace(v); v {
		case "auto", "":
			*m = memoryLimit{}
			return nil
		case "off":
			*m = memoryLimit{off: true}
			return nil
		}
		n, err := layout.ParseSize(v)
		if err != nil || n < minMemoryLimit {
			return fmt.Errorf("%q is not \"auto\", \"off\" or a size of at least %s", v, layout.FormatSize(minMemoryLimit))
		}
		*m = memoryLimit{bytes: n}
		return nil
	})
}

// apply sets the process's soft memory limit and logs it. It changes the
// whole process, so only a command that owns it (a.stdlog: not one run
// in-process by a test) applies it.
func (m memoryLimit) apply(a *app, log *slog.Logger) {
	if !a.stdlog {
		return
	}
	switch {
	case m.off:
		debug.SetMemoryLimit(math.MaxInt64)
		log.Info("memory_limit", "bytes", "off", "source", "memory_limit")
	case m.bytes > 0:
		debug.SetMemoryLimit(m.bytes)
		log.Info("memory_limit", "bytes", m.bytes, "source", "memory_limit")
	case os.Getenv("GOMEMLIMIT") != "":
		// The runtime read it at start.
		log.Info("memory_limit", "bytes", debug.SetMemoryLimit(-1), "source", "GOMEMLIMIT")
	default:
		avail, from := availableMemory()
		if avail <= 0 {
			log.Info("memory_limit", "bytes", "off", "source", "no cgroup memory.max nor /proc/meminfo")
			return
		}
		n := max(avail/4*3, minMemoryLimit)
		debug.SetMemoryLimit(n)
		log.Info("memory_limit", "bytes", n, "source", "3/4 of "+from)
	}
}

// availableMemory returns the memory this process may use: its cgroup v2
// memory.max where one is set (systemd's MemoryMax=), else the RAM
// (MemTotal); 0 when neither can be read.
func availableMemory() (int64, string) {
	ram := memTotal()
	if cg := cgroupMemoryMax(); cg > 0 && (ram == 0 || cg < ram) {
		return cg, "cgroup memory.max"
	}
	return ram, "MemTotal"
}

// cgroupMemoryMax returns the memory.max of this process's cgroup v2, 0 if
// there is none or it is "max".
func cgroupMemoryMax() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		path, ok := strings.CutPrefix(l, "0::")
		if !ok {
			continue
		}
		v, err := os.ReadFile("/sys/fs/cgroup" + strings.TrimSpace(path) + "/memory.max")
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		if err != nil {
			return 0 // "max"
		}
		return n
	}
	return 0
}

// memTotal returns /proc/meminfo's MemTotal in bytes, 0 if unreadable.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
