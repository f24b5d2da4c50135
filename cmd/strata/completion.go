package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// subcommands are the verbs of the commands that take one first.
var subcommands = map[string][]string{
	"tier":  {"validate", "status", "drain"},
	"admin": {"mds", "rebuild", "scrub", "ds"},
	"mpiio": {"hints", "check"},
}

// runCompletion prints the bash completion script for strata, generated
// from the command table and each command's flags.
func runCompletion(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usageErrorf("__completion", "takes no arguments")
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	w := a.stdout
	fmt.Fprintf(w, `# bash completion for strata %s, generated from its command table
# (strata __completion). Completes commands, their verbs and flags, then
# file names.
_strata() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} verb=${COMP_WORDS[2]}
	local verbs="" flags=""
	if [[ $COMP_CWORD -eq 1 ]]; then
		COMPREPLY=($(compgen -W "%s --version --help" -- "$cur"))
		return
	fi
	case $cmd in
`, version, strings.Join(names, " "))
	for _, c := range commands() {
		verbs := subcommands[c.name]
		fmt.Fprintf(w, "\t%s)\n", c.name)
		if len(verbs) > 0 {
			fmt.Fprintf(w, "\t\tverbs=%q\n\t\tcase $verb in\n", strings.Join(verbs, " "))
			for _, v := range verbs {
				fmt.Fprintf(w, "\t\t%s) flags=%q ;;\n", v, strings.Join(flagNames(ctx, a, c, []string{v}), " "))
			}
			fmt.Fprintf(w, "\t\t*) flags=%q ;;\n\t\tesac\n", strings.Join(flagNames(ctx, a, c, nil), " "))
		} else {
			fmt.Fprintf(w, "\t\tflags=%q\n", strings.Join(flagNames(ctx, a, c, nil), " "))
		}
		fmt.Fprint(w, "\t\t;;\n")
	}
	fmt.Fprint(w, `	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$flags --help" -- "$cur"))
	elif [[ $COMP_CWORD -eq 2 && -n $verbs ]]; then
		COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _strata strata
`)
	return nil
}

// flagNames returns the flags command c defines when run with args, as
// --name, sorted. It runs c with a.introspect set and a cancelled context:
// the command stops at its flag parsing.
func flagNames(ctx context.Context, a *app, c command, args []string) []string {
	var names []string
	b := *a
	b.stdout, b.stderr = io.Discard, io.Discard
	b.introspect = func(f *cmdFlags) {
		f.VisitAll(func(fl *flag.Flag) {
			if len(fl.Name) == 1 {
				names = append(names, "-"+fl.Name)
			} else {
				names = append(names, "--"+fl.Name)
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = c.run(cctx, &b, args)
	sort.Strings(names)
	return names
}
