package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestManPages(t *testing.T) {
	dir := t.TempDir()
	strata(t, map[string]string{"SOURCE_DATE_EPOCH": "1700000000"}, "__man", dir).ok(t)
	pages := []string{"strata.1", mountHelperName + ".8"}
	for _, c := range commands() {
		pages = append(pages, "strata-"+c.name+".1")
	}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Error(err)
			continue
		}
		if !strings.Contains(string(b), `"2023-11-14"`) || !strings.Contains(string(b), ".SH NAME\n") {
			t.Errorf("%s: no date from SOURCE_DATE_EPOCH or no NAME section:\n%s", p, b)
		}
		// man renders it without a warning from groff.
		cmd := exec.Command("man", "--warnings", "-l", filepath.Join(dir, p))
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=0")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "warning:") {
			t.Errorf("man -l %s: %v\n%s", p, err, out)
		}
	}
	ls, _ := os.ReadFile(filepath.Join(dir, "strata-ls.1"))
	if !strings.Contains(string(ls), `strata ls [flags] [PATH...]`) || !strings.Contains(string(ls), `\-mds`) {
		t.Errorf("strata-ls.1 lacks the command's --help:\n%s", ls)
	}
}

func TestCompletion(t *testing.T) {
	script := strata(t, nil, "__completion").ok(t).stdout
	for _, tc := range []struct{ words, want string }{
		{"strata mo", "mount"},
		{"strata ver", "version"},
		{"strata admin ", "mds rebuild scrub ds"},
		{"strata ls -", "--mds -a -d -h -l --help"},
		{"strata tier validate --al", "--allowed-mount-prefix"},
	} {
		words := strings.Split(tc.words, " ")
		q := make([]string, len(words))
		for i, w := range words {
			q[i] = "'" + w + "'"
		}
		sh := script + "\nCOMP_WORDS=(" + strings.Join(q, " ") + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) + "; _strata; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command("bash", "-c", sh).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
			t.Errorf("completion of %q: %q (%v), want %q", tc.words, got, err, tc.want)
		}
	}
}
