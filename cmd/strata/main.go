package main

import (
	"os"
)

func main() {
	os.Exit(exitCode(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
}
