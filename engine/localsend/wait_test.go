package localsend

import "runtime"

// waitABit yields while a test polls for a state another goroutine reaches
// (never a timed wait: the loop's condition decides).
func waitABit() { runtime.Gosched() }
