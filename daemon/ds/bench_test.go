package ds

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

const benchReq = 1 << 20 // bytes per call, what the client sends

func benchHarness(b *testing.B) *harness {
	return newHarness(b, func(c *Config, _ *Deps) { c.BlockSize = DefaultBlockSize })
}

// BenchmarkWrite writes 1 MiB calls through the real server, cycling over
// 64 MiB of one component.
func BenchmarkWrite(b *testing.B) {
	h := benchHarness(b)
	id := rpc.ComponentID{Ino: 1, Gen: 1}
	tok, p := h.rw(id), make([]byte, benchReq)
	b.SetBytes(benchReq)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := h.writeTok(tok, id, uint64(i%64)*benchReq, p); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkRead reads 1 MiB calls of 64 MiB written before.
func BenchmarkRead(b *testing.B) {
	h := benchHarness(b)
	id := rpc.ComponentID{Ino: 1, Gen: 1}
	tok, p := h.rw(id), make([]byte, benchReq)
	for i := range 64 {
		if _, err := h.writeTok(tok, id, uint64(i)*benchReq, p); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(benchReq)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if n, err := h.readInto(tok, id, uint64(i%64)*benchReq, p); err != nil || n != benchReq {
			b.Fatal(n, err)
		}
		i++
	}
}

// BenchmarkWriteParallel has 4 writers per CPU on 4 components, as a
// striped client does.
func BenchmarkWriteParallel(b *testing.B) {
	h := benchHarness(b)
	b.SetBytes(benchReq)
	b.ReportAllocs()
	b.SetParallelism(4)
	var next atomicCounter
	b.RunParallel(func(pb *testing.PB) {
		id := rpc.ComponentID{Ino: 1 + next.add()%4, Gen: 1}
		tok, p := h.rw(id), make([]byte, benchReq)
		for i := 0; pb.Next(); i++ {
			if _, err := h.writeTok(tok, id, uint64(i%64)*benchReq, p); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadParallel is the read side of BenchmarkWriteParallel.
func BenchmarkReadParallel(b *testing.B) {
	h := benchHarness(b)
	for c := range 4 {
		id := rpc.ComponentID{Ino: 1 + uint64(c), Gen: 1}
		p := make([]byte, benchReq)
		for i := range 16 {
			if _, err := h.write(id, uint64(i)*benchReq, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(benchReq)
	b.ReportAllocs()
	b.SetParallelism(4)
	var next atomicCounter
	b.RunParallel(func(pb *testing.PB) {
		id := rpc.ComponentID{Ino: 1 + next.add()%4, Gen: 1}
		tok, p := h.rw(id), make([]byte, benchReq)
		for i := 0; pb.Next(); i++ {
			if n, err := h.readInto(tok, id, uint64(i%16)*benchReq, p); err != nil || n != benchReq {
				b.Error(n, err)
				return
			}
		}
	})
}

// BenchmarkLoopbackTCP is the yardstick: 1 MiB writes on a raw loopback
// TCP connection into a reader that discards them.
func BenchmarkLoopbackTCP(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c)
	}()
	var d net.Dialer
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, benchReq)
	b.SetBytes(benchReq)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(p); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	ln.Close()
	<-done
}
