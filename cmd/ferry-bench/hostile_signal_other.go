//go:build !unix

package main

import "os"

// heapProfileSignal is nil: ferry-cli takes heap profiles on SIGUSR1, which
// this system lacks.
var heapProfileSignal os.Signal
