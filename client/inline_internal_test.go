package client

import (
	"errors"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// TestInlineOfChecksum: inline bytes that do not match the CRC32C the MDS
// sent are EIO, never data; matching ones are read as sent.
func TestInlineOfChecksum(t *testing.T) {
	data := []byte("small file bytes")
	good := &rpc.LayoutGetResp{Inline: &rpc.InlineData{Data: data, Sum: crc32c.Checksum(data), Max: 64 << 10}}
	in, err := inlineOf(good)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 20)
	in.read(p, 6)
	if string(p[:10]) != "file bytes" || p[10] != 0 {
		t.Fatalf("read %q", p)
	}
	bad := &rpc.LayoutGetResp{Inline: &rpc.InlineData{Data: []byte("small filE bytes"), Sum: good.Inline.Sum}}
	if _, err := inlineOf(bad); !errors.Is(err, syscall.EIO) {
		t.Fatalf("corrupt inline data: %v, want EIO", err)
	}
	if _, err := newView(&rpc.LayoutGetResp{Layout: rpc.Layout{Spec: "width=1,unit=1M,scheme=none", Generation: 1, Targets: []string{"a"}, Addrs: []string{"x"}}, Inline: bad.Inline}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a view of corrupt inline data: %v, want EIO", err)
	}
}
