//go:build !unix

package main

import "os"

// loopMaxRSS: peak RSS is not reported on this platform.
func loopMaxRSS(ps *os.ProcessState) int64 { return 0 }

// flushDirty: nothing portable to do here.
func flushDirty() {}
