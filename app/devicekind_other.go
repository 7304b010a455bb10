//go:build !linux

package app

// deviceKind is "" where Ferry cannot tell a laptop yet: the name then says
// "computer".
func deviceKind() string { return "" }
