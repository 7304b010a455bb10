//go:build !unix

package main

// selfCPU: not measured on this platform.
func selfCPU() float64 { return 0 }

// flushDirty: nothing portable to do here.
func flushDirty() {}
