package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/strata-hpc/strata/client"
)

// cmdFlags is a subcommand's flag set with its usage text.
type cmdFlags struct {
	*flag.FlagSet
	name  string
	args  string // synopsis of the positional arguments
	about string // what the command does, printed by --help
}

// newFlags returns the flag set of subcommand name. args is the synopsis
// of its positional arguments, about a paragraph or more for --help.
func newFlags(name, args, about string) *cmdFlags {
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, name: name, args: args, about: about}
}

// printUsage writes the command's help to w.
func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", strings.TrimSpace("strata "+f.name+" [flags] "+f.args), strings.TrimSpace(f.about))
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
}

// parse parses args, flags and positional arguments in any order (as GNU
// tools do, up to a "--"), expanding grouped one-letter boolean flags
// ("-rf" is "-r -f"). --help prints the usage to a.stdout and returns
// flag.ErrHelp; a bad flag is a usage error.
func (f *cmdFlags) parse(a *app, args []string) ([]string, error) {
	if a.introspect != nil {
		a.introspect(f)
		return nil, flag.ErrHelp
	}
	var rest []string
	for i, arg := range args {
		if arg == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	args = f.expandGroups(args)
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if err == flag.ErrHelp {
				f.printUsage(a.stdout)
				return nil, flag.ErrHelp
			}
			return nil, usageErrorf(f.name, "%v", err)
		}
		args = f.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, rest...), nil
}

// expandGroups turns "-rf" into "-r", "-f" when every letter is a
// one-letter boolean flag.
func (f *cmdFlags) expandGroups(args []string) []string {
	out := make([]string, 0, len(args))
	for _, arg := range args {
		if len(arg) > 2 && arg[0] == '-' && arg[1] != '-' && !strings.Contains(arg, "=") && f.allBool(arg[1:]) {
			for _, c := range arg[1:] {
				out = append(out, "-"+string(c))
			}
			continue
		}
		out = append(out, arg)
	}
	return out
}

func (f *cmdFlags) allBool(letters string) bool {
	for _, c := range letters {
		fl := f.Lookup(string(c))
		if fl == nil {
			return false
		}
		b, ok := fl.Value.(interface{ IsBoolFlag() bool })
		if !ok || !b.IsBoolFlag() {
			return false
		}
	}
	return true
}

// nargs checks the number of positional arguments.
func (f *cmdFlags) nargs(args []string, lo, hi int) error {
	switch {
	case len(args) < lo:
		return usageErrorf(f.name, "missing arguments: want %s", f.args)
	case hi == 0 && len(args) > 0:
		return usageErrorf(f.name, "takes no arguments, got %q", args[0])
	case hi >= 0 && len(args) > hi:
		return usageErrorf(f.name, "too many arguments: want %s", f.args)
	}
	return nil
}

// mdsFlag registers --mds and returns a function that resolves it: the
// flag, else $STRATA_MDS, else client.DefaultMDS.
func (f *cmdFlags) mdsFlag(a *app) func() string {
	v := f.String("mds", "", "MDS address (default $STRATA_MDS, else "+client.DefaultMDS+")")
	return func() string {
		if *v != "" {
			return *v
		}
		if e := a.env("STRATA_MDS"); e != "" {
			return e
		}
		return client.DefaultMDS
	}
}
