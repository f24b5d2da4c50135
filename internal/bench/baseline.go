package bench

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LoopbackTCP moves total bytes over conns parallel loopback TCP
// connections in 1 MiB writes and returns the rate in bytes per second.
func LoopbackTCP(total int64, conns int) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	var sinks sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			sinks.Add(1)
			go func() {
				defer sinks.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	per := total / int64(conns)
	buf := make([]byte, 1<<20)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			for sent := int64(0); sent < per; sent += int64(len(buf)) {
				if _, err := c.Write(buf); err != nil {
					errs <- err
					break
				}
			}
			c.Close()
		}()
	}
	wg.Wait()
	sinks.Wait()
	el := time.Since(start)
	close(errs)
	for err := range errs {
		return 0, fmt.Errorf("loopback baseline: %w", err)
	}
	return float64(per*int64(conns)) / el.Seconds(), nil
}

// DiskWrite writes total bytes into files files under dir in parallel, 4 MiB
// at a time, the way the data servers write their columns, and returns the
// buffered rate (until the last write returns) and the durable rate
// (including an fsync of every file), in bytes per second.
func DiskWrite(dir string, total int64, files int) (buffered, durable float64, err error) {
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	fhs := make([]*os.File, files)
	for i := range fhs {
		if fhs[i], err = os.Create(filepath.Join(dir, fmt.Sprintf("disk%d", i))); err != nil {
			return 0, 0, err
		}
		defer os.Remove(fhs[i].Name())
		defer fhs[i].Close()
	}
	per := total / int64(files)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, files)
	for _, fh := range fhs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := int64(0); off < per; off += int64(len(buf)) {
				if _, err := fh.WriteAt(buf, off); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	for _, fh := range fhs {
		if err := fh.Sync(); err != nil {
			errs <- err
		}
	}
	dl := time.Since(start)
	close(errs)
	for err := range errs {
		return 0, 0, fmt.Errorf("disk baseline: %w", err)
	}
	n := float64(per * int64(files))
	return n / el.Seconds(), n / dl.Seconds(), nil
}
