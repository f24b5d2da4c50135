package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
)

// fuseMountAt returns the file system type mounted on dir in this
// process's mount namespace ("" when none), from /proc/self/mountinfo.
func fuseMountAt(dir string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	fstype := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescapeMount(fields[4]) != dir {
			continue
		}
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) {
				fstype = fields[i+1] // the last mount on dir is the visible one
			}
		}
	}
	return fstype
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mounted reports whether the tier's FUSE mount is on its path here and
// its `strata mount` runs.
func (t *tier) mounted() bool {
	t.smu.Lock()
	p, dir := t.st.Procs["mount"], t.st.MountPath
	t.smu.Unlock()
	return strings.HasPrefix(fuseMountAt(dir), "fuse") && alive(p, t.marker())
}

// waitMounted waits until the FUSE mount shows up on dir, or the mount
// process exits, or ctx ends.
func waitMounted(ctx context.Context, dir string, p procInfo, marker string) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if strings.HasPrefix(fuseMountAt(dir), "fuse") {
			return nil
		}
		if !alive(p, marker) {
			return errors.New(exitReason("strata mount", p))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not mounted on %s: %w", dir, ctx.Err())
		case <-tick.C:
		}
	}
}

// unmountTier takes the tier's mount off dir, whoever serves it: a clean
// unmount, retried for a moment while busy, then a lazy one. No stale
// mount stays behind, whatever state the mount process is in.
func unmountTier(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for strings.HasPrefix(fuseMountAt(dir), "fuse") {
		err := fuse.Unmount(dir, false)
		switch {
		case err == nil, errors.Is(err, fuse.ErrNotMounted):
			continue
		case errors.Is(err, fuse.ErrBusy) && time.Now().Before(deadline):
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err := fuse.Unmount(dir, true); err != nil && !errors.Is(err, fuse.ErrNotMounted) {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return nil
}
