package localsend

import (
	"runtime"
	"time"
)

// waitABit yields while a test polls for a state another goroutine reaches
// (never a timed wait: the loop's condition decides).
func waitABit() { runtime.Gosched() }

// hangGuard bounds a wait for something that must happen, so that a bug
// fails the test instead of hanging it (it is not a timing assertion).
const hangGuard = 60 * time.Second
