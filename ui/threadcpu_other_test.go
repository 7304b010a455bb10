//go:build !linux

package ui

import "time"

// threadCPU is not measured here: BenchmarkUIStall reports 0 for it.
func threadCPU() time.Duration { return 0 }
