// Command strata is Strata's single binary: the daemons (dev, mds, ds) and
// the user commands (ls, cp, setstripe, ...). main is glue only; Main holds
// everything and is what the tests run.
package main

import (
	"os"
)

func main() {
	os.Exit(exitCode(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
}
