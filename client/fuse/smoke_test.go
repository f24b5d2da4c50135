package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSmoke(t *testing.T) {
	_, s := startMount(t, 4)
	p := filepath.Join(s.Dir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v (len %d)", err, len(got))
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(s.Dir())
	if err != nil || len(ents) != 2 {
		t.Fatalf("readdir: %v %v", ents, err)
	}
}
