package nfsguest

import (
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
)

// initScript is the guest's /init: it loads the modules, brings up the
// network, mounts the server's export with the options of the kernel
// command line (guest.opts=, guest.path=), runs /bin/guest (guest.args=, commas for
// spaces), prints the mount's /proc/self/mountstats, unmounts and powers
// off. With guest.hostlo=1 the guest's loopback address is removed and
// 127.0.0.0/8 is routed to qemu, which connects to the host's own loopback
// (Options.HostLoopback). Every line for the host starts with "GUEST".
const initScript = `#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo /sbin/modprobe > /proc/sys/kernel/modprobe
OPTS=vers=4.1; ARGS=; EXPORT=/
for kv in $(cat /proc/cmdline); do
  case "$kv" in
    guest.opts=*) OPTS=${kv#*=} ;;
    guest.path=*) EXPORT=${kv#*=} ;;
    guest.args=*) ARGS=$(echo "${kv#*=}" | tr , ' ') ;;
    guest.hostlo=1) HOSTLO=1 ;;
  esac
done
# module parameters come from the command line as MODULE.PARAM=VALUE
for m in $(cat /etc/modules.order); do
  name=$(basename $m .ko)
  params=$(tr ' ' '\n' < /proc/cmdline | grep "^$name\." | sed "s/^$name\.//")
  insmod /lib/modules/$m $params 2>/dev/null
done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
if [ -n "$HOSTLO" ]; then
  ip addr del 127.0.0.1/8 dev lo
  for c in all eth0; do echo 1 > /proc/sys/net/ipv4/conf/$c/route_localnet; done
  ip route add 127.0.0.0/8 via 10.0.2.2 dev eth0 && echo "GUEST host loopback routed"
fi
echo "GUEST mounting $EXPORT $OPTS"
if mount -t nfs4 -o "$OPTS,addr=10.0.2.100" "10.0.2.100:$EXPORT" /mnt; then
  echo "GUEST MOUNT OK"
  /bin/guest /mnt $ARGS
  echo "GUEST EXIT $?"
  sync
  awk '/^device /{p=($0 ~ / mounted on \/mnt with fstype nfs/)} p' /proc/self/mountstats | sed 's/^/GUEST mountstats: /'
  umount /mnt && echo "GUEST UMOUNT OK"
else
  echo "GUEST MOUNT FAILED"
  dmesg | tail -20 | sed 's/^/GUEST dmesg: /'
fi
dmesg | grep -i -E 'nfs|rpc|layout' | tail -20 | sed 's/^/GUEST dmesg: /'
echo "GUEST POWEROFF"
poweroff -f
`

var busyboxApplets = []string{"sh", "mount", "umount", "cat", "echo", "ip", "insmod", "modprobe",
	"poweroff", "sleep", "dmesg", "grep", "sed", "awk", "tr", "sync", "ls", "tail", "mkdir"}

// buildInitramfs writes the gzipped cpio to out, with guestBin as
// /bin/guest and each of progs as /bin/NAME with its shared libraries.
func buildInitramfs(k *kernel, guestBin string, progs []string, out string) error {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("%w: busybox (apt-get install busybox-static)", ErrMissing)
	}
	bbData, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	if strings.Contains(string(bbData[:min(len(bbData), 4096)]), "ld-linux") {
		return fmt.Errorf("%w: %s is not static (apt-get install busybox-static)", ErrMissing, bb)
	}
	order, err := k.loadOrder()
	if err != nil {
		return err
	}
	alias, err := k.aliases(order)
	if err != nil {
		return err
	}
	gb, err := os.ReadFile(guestBin)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	c := &cpioWriter{w: gz}
	made := map[string]bool{} // files and directories written
	for _, d := range []string{"bin", "sbin", "proc", "sys", "dev", "mnt", "tmp", "etc", "lib", "lib/modules", "lib/modules/" + k.version} {
		c.dir(d)
		made[d] = true
	}
	c.file("init", []byte(initScript))
	c.file("bin/busybox", bbData)
	for _, a := range busyboxApplets {
		c.symlink("bin/"+a, "busybox")
	}
	c.symlink("sbin/modprobe", "../bin/busybox")
	c.file("bin/guest", gb)
	c.symlink("etc/mtab", "/proc/mounts")
	for _, p := range progs {
		if err := addProgram(c, made, p); err != nil {
			return err
		}
	}
	var dep, orderList strings.Builder
	for _, rel := range order {
		data, err := k.readModule(rel)
		if err != nil {
			return fmt.Errorf("read module %s: %w", rel, err)
		}
		name := modName(rel) + ".ko"
		dst := "lib/modules/" + k.version + "/" + name
		if !made[dst] {
			c.file(dst, data)
			made[dst] = true
		}
		fmt.Fprintf(&orderList, "%s/%s\n", k.version, name)
		fmt.Fprintf(&dep, "%s:\n", name)
	}
	c.file("etc/modules.order", []byte(orderList.String()))
	// busybox modprobe resolves the kernel's request_module() calls with
	// these; every module is already loaded, so no dependencies are listed.
	c.file(path.Join("lib/modules", k.version, "modules.dep"), []byte(dep.String()))
	c.file(path.Join("lib/modules", k.version, "modules.alias"), alias)
	if err := c.close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// addProgram adds the host program prog as /bin/NAME and the shared
// libraries ldd names for it at their own paths (none for a static
// binary); made records the files and directories written.
func addProgram(c *cpioWriter, made map[string]bool, prog string) error {
	data, err := os.ReadFile(prog)
	if err != nil {
		return fmt.Errorf("nfsguest: program for the guest: %w", err)
	}
	c.file("bin/"+path.Base(prog), data)
	libs, err := sharedLibraries(prog)
	if err != nil {
		return err
	}
	for _, lib := range libs {
		dst := strings.TrimPrefix(lib, "/")
		if made[dst] {
			continue
		}
		b, err := os.ReadFile(lib)
		if err != nil {
			return fmt.Errorf("nfsguest: library %s of %s: %w", lib, prog, err)
		}
		var dirs []string
		for d := path.Dir(dst); d != "." && !made[d]; d = path.Dir(d) {
			dirs = append(dirs, d)
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			c.dir(dirs[i])
			made[dirs[i]] = true
		}
		c.file(dst, b)
		made[dst] = true
	}
	return nil
}

// sharedLibraries returns the absolute paths of the shared libraries prog
// loads (ldd), none for a static binary.
func sharedLibraries(prog string) ([]string, error) {
	out, err := exec.Command("ldd", prog).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("nfsguest: ldd %s: %w: %s", prog, err, out)
	}
	var libs []string
	for _, l := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(l) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	return libs, nil
}
