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
