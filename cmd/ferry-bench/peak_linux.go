package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// watchPeak samples a running process's VmHWM (peak resident set of its own
// memory) until stop is called, and returns what it saw last, in KiB.
//
// ru_maxrss from wait4 cannot be used for this: a child started by a Go
// program inherits, at exec, the parent's peak as its own (the kernel records
// the high-water mark of the memory it leaves, which a vfork child shares
// with its parent), so every process this bench starts would report at least
// the bench's own peak.
func watchPeak(pid int) (stop func() int64) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var peak int64
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := func() {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		_, rest, ok := bytes.Cut(b, []byte("VmHWM:"))
		if !ok {
			return
		}
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(line), []byte(" kB"))), 10, 64)
		if err == nil && kb > peak {
			peak = kb
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak
	}
}
