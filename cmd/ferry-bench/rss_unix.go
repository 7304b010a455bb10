//go:build unix

package main

import (
	"os"
	"syscall"
)

// loopMaxRSS is the peak resident set of a finished process, in KiB (Linux).
func loopMaxRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// flushDirty writes dirty pages back (sync(2)) so one run's writes do not
// slow down the next.
func flushDirty() { syscall.Sync() }
