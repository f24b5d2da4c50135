package bench

import (
	"fmt"
	"io"
	"net"
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
