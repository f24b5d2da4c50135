package main

import (
	"os"
)

func main() {
	args := os.Args[1:]
	if isMountHelper(os.Args[0]) {
		// mount(8) runs /sbin/mount.fuse.strata, a link to this binary.
		args = append([]string{mountHelperName}, args...)
	}
	os.Exit(exitCode(Main(args, os.Stdin, os.Stdout, os.Stderr)))
}
