package main

import "testing"

// TestPrintable: what the network sends is printed on one line, with no
// control character reaching the terminal; plain names are left alone.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"ds1":         "ds1",
		"my file.txt": "my file.txt",
		"héllo":       "héllo",
		"ds2\nds3 up": `"ds2\nds3 up"`,
		"red\x1b[31m": `"red\x1b[31m"`,
		"tab\there":   `"tab\there"`,
		"bad\xffutf8": `"bad\xffutf8"`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %s, want %s", in, got, want)
		}
	}
	if got := oneLine("no such file\x1b[2J (gone)\n"); got != `no such file\x1b[2J (gone)` {
		t.Errorf("oneLine = %q", got)
	}
}
