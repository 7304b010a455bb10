//go:build unix

package main

import "syscall"

// selfCPU is this process's user + system time so far, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// flushDirty writes dirty pages back (sync(2)) so one run's writes do not
// slow down the next.
func flushDirty() { syscall.Sync() }
