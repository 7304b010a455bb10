//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the user and system CPU time this process has used so far.
// Benchmarks report it beside the wall clock, which a loaded machine
// stretches and CPU time much less.
func CPUTime() time.Duration {
	return rusage(syscall.RUSAGE_SELF)
}

// ChildrenCPUTime is the CPU time of the children this process has waited
// for (a curl a benchmark ran, say).
func ChildrenCPUTime() time.Duration {
	return rusage(syscall.RUSAGE_CHILDREN)
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// SyncDisks writes every dirty page to its disk, so a benchmark that just
// wrote its source does not pay for that writeback.
func SyncDisks() { syscall.Sync() }
