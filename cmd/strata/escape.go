package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns a string that came from the network (a data server
// id, a node name, an address, a file name, an error message) as the CLI
// prints it: as is when every character is printable, else quoted with Go
// escapes, so that a newline cannot forge a line of a table and a
// terminal escape sequence never reaches the terminal.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// printables is printable of each of ss, joined by sep.
func printables(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printable(s)
	}
	return strings.Join(out, sep)
}
