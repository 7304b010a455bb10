//go:build unix

package main

import (
	"os"
	"syscall"
)

// heapProfileSignal asks a ferry-cli run with FERRY_HEAPPROFILE for a heap profile.
var heapProfileSignal os.Signal = syscall.SIGUSR1
