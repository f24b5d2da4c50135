package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "a-rather-long-file-name-for-the-bar.bin", 3<<20)
	w := &countingWriter{w: io.Discard, p: p}
	for range 3 {
		if _, err := w.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	p.finish(true)
	out := b.String()
	last := out[strings.LastIndex(out, "\r")+1:]
	if !strings.HasPrefix(last, "a-rather-long-file-na... [==============================] 100%") ||
		!strings.Contains(last, "3.0M / 3.0M") || !strings.HasSuffix(last, "\n") {
		t.Errorf("last frame %q", last)
	}

	b.Reset()
	p = newProgress(&b, "x", 100)
	p.finish(false)
	if !strings.HasSuffix(b.String(), "\r\033[K") {
		t.Errorf("a failed copy does not clear the bar: %q", b.String())
	}

	var nilBar *progress // no terminal: no bar, and no goroutine
	nilBar.add(5)
	nilBar.finish(true)
	if newProgress(nil, "x", 1) != nil {
		t.Error("a bar without a writer")
	}
}

// TestCpProgressOnTerminal: with stderr a terminal, cp draws the bar there
// and nothing on stdout; without one (every other test), stderr stays empty.
func TestCpProgressOnTerminal(t *testing.T) {
	c := newCLI(t, 2)
	src, _ := randomFile(t, t.TempDir(), "p.bin", 1<<20)
	var out, errb syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, tty: true,
		getenv: func(k string) string { return c.env()[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.main(ctx, []string{"cp", src, "/p.bin"}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" || !strings.Contains(errb.String(), "100%") || !strings.Contains(errb.String(), "p.bin") {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	// -q: no bar even on a terminal.
	errb = syncBuffer{}
	a.stderr = &errb
	if err := a.main(ctx, []string{"cp", "-q", "/p.bin", filepath.Join(t.TempDir(), "q.bin")}); err != nil {
		t.Fatal(err)
	}
	if errb.String() != "" {
		t.Errorf("-q drew %q", errb.String())
	}
	if isTerminal(&bytes.Buffer{}) || isTerminal(os.NewFile(^uintptr(0), "bad")) {
		t.Error("isTerminal on a non-terminal")
	}
}
