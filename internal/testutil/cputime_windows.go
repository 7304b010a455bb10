package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the user and system CPU time this process has used so far.
// Benchmarks report it beside the wall clock, which a loaded machine
// stretches and CPU time much less.
func CPUTime() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return filetime(kernel) + filetime(user)
}

// ChildrenCPUTime is the CPU time of the children this process has waited
// for; Windows keeps no such sum, so it is 0 there.
func ChildrenCPUTime() time.Duration { return 0 }

// filetime is a FILETIME read as a duration (it counts 100 ns units).
func filetime(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}

// SyncDisks writes dirty pages out where the system offers one call for it;
// Windows does not (FlushFileBuffers is per file), so it does nothing there.
func SyncDisks() {}
