package nfsguest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrMissing is returned when something the guest needs is not installed.
var ErrMissing = errors.New("nfsguest: missing on this host (run contrib/test-deps.sh)")

// modules are loaded in the guest (with their dependencies); fuse is for
// a `strata mount` in the guest.
var modules = []string{"virtio_pci", "virtio_net", "sunrpc", "nfs", "nfsv3", "nfsv4", "nfs_layout_flexfiles", "fuse"}

// kernel is the host's installed 6.1 kernel.
type kernel struct {
	version string
	bzImage string
	modDir  string
}

func findKernel() (*kernel, error) {
	imgs, _ := filepath.Glob("/boot/vmlinuz-6.1*")
	if len(imgs) == 0 {
		return nil, fmt.Errorf("%w: no /boot/vmlinuz-6.1* (apt-get install linux-image-amd64)", ErrMissing)
	}
	sort.Strings(imgs)
	img := imgs[len(imgs)-1]
	v := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
	mod := filepath.Join("/lib/modules", v)
	if _, err := os.Stat(filepath.Join(mod, "modules.dep")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMissing, err)
	}
	return &kernel{version: v, bzImage: img, modDir: mod}, nil
}

// loadOrder returns the module files to insmod, dependencies first.
func (k *kernel) loadOrder() ([]string, error) {
	f, err := os.Open(filepath.Join(k.modDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	deps := map[string][]string{} // module name -> dependency paths
	path := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		file, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n := modName(file)
		path[n] = file
		deps[n] = strings.Fields(rest)
	}
	var order []string
	seen := map[string]bool{}
	var visit func(n string) error
	visit = func(n string) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		p, ok := path[n]
		if !ok {
			return nil // built into the kernel
		}
		for _, d := range deps[n] {
			if err := visit(modName(d)); err != nil {
				return err
			}
		}
		order = append(order, p)
		return nil
	}
	for _, m := range modules {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func modName(file string) string {
	b := filepath.Base(file)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		b = strings.TrimSuffix(b, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(b, ".ko"), "-", "_")
}

// readModule returns a module's uncompressed bytes.
func (k *kernel) readModule(rel string) ([]byte, error) {
	p := filepath.Join(k.modDir, rel)
	switch {
	case strings.HasSuffix(p, ".xz"):
		return exec.Command("xz", "-dc", p).Output()
	case strings.HasSuffix(p, ".zst"):
		return exec.Command("zstd", "-qdc", p).Output()
	}
	return os.ReadFile(p)
}

// vmlinux returns an uncompressed ELF kernel extracted from the bzImage
// (qemu boots it through its PVH entry, skipping the in-guest
// decompression, ~2 s under TCG), cached under dir; or the bzImage itself
// if extraction fails.
func (k *kernel) vmlinux(dir string) string {
	out := filepath.Join(dir, "vmlinux-"+k.version)
	if st, err := os.Stat(out); err == nil && st.Size() > 0 {
		return out
	}
	img, err := os.ReadFile(k.bzImage)
	if err != nil {
		return k.bzImage
	}
	off := bytes.Index(img, []byte("\xfd7zXZ\x00"))
	if off < 0 {
		return k.bzImage
	}
	cmd := exec.Command("xz", "-dc", "--single-stream")
	cmd.Stdin = bytes.NewReader(img[off:])
	elf, err := cmd.Output()
	if err != nil || !bytes.HasPrefix(elf, []byte("\x7fELF")) {
		return k.bzImage
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return k.bzImage
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	if err := os.WriteFile(tmp, elf, 0o644); err != nil {
		return k.bzImage
	}
	if err := os.Rename(tmp, out); err != nil {
		return k.bzImage
	}
	return out
}

// aliases returns the lines of modules.alias naming the given modules, so
// the guest's request_module("nfs-layouttype4-4") finds the flex-files
// driver.
func (k *kernel) aliases(files []string) ([]byte, error) {
	want := map[string]bool{}
	for _, f := range files {
		want[modName(f)] = true
	}
	b, err := os.ReadFile(filepath.Join(k.modDir, "modules.alias"))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "alias" && want[f[2]] {
			out.WriteString(l + "\n")
		}
	}
	return out.Bytes(), nil
}
