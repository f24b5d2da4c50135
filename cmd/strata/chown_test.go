package main

import (
	"strings"
	"testing"
)

// TestChownChgrp: root gives a file away by id and by name, the group
// alone, and a name this machine does not know is a usage error that
// changes nothing. (Who may chown what is the permission matrix's:
// internal/permtest.)
func TestChownChgrp(t *testing.T) {
	c := newCLI(t, 1)
	c.ok("touch", "/f")
	c.ok("chmod", "4755", "/f")
	c.ok("chown", "1234:5678", "/f")
	out := c.ok("stat", "/f")
	for _, want := range []string{"uid:               1234", "gid:               5678", "0755 (-rwxr-xr-x)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stat after chown 1234:5678 (setuid cleared) lacks %q:\n%s", want, out)
		}
	}
	c.ok("chgrp", "root", "/f")
	c.ok("chown", "2345:", "/f")
	out = c.ok("stat", "/f")
	for _, want := range []string{"uid:               2345", "gid:               0"} {
		if !strings.Contains(out, want) {
			t.Errorf("stat after chgrp root and chown 2345: lacks %q:\n%s", want, out)
		}
	}
	c.run("chown", "no-such-user-here", "/f").fails(t, 2, `invalid user: "no-such-user-here"`)
	c.run("chgrp", "no-such-group-here", "/f").fails(t, 2, `invalid group: "no-such-group-here"`)
	c.run("chown", ":", "/f").fails(t, 2, "names neither an owner nor a group")
	c.run("chown", "0", "/nope").fails(t, 1, "chown /nope: no such file or directory")
	if out := c.ok("stat", "/f"); !strings.Contains(out, "uid:               2345") {
		t.Errorf("a refused chown changed the file:\n%s", out)
	}
}
