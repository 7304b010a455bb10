//go:build !linux

package uiloop

import "time"

// threadCPU is not read here: Stats.MaxCPU stays 0.
func threadCPU() time.Duration { return 0 }
