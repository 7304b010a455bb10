//go:build !unix

package main

// heapProfileOnSignal does nothing: there is no SIGUSR1 here.
func heapProfileOnSignal(string) {}
