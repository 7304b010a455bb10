//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// heapProfileOnSignal writes a heap profile to path at each SIGUSR1.
func heapProfileOnSignal(path string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			writeHeapProfile(path)
		}
	}()
}
