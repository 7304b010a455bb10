//go:build !unix

package localsend

import "syscall"

// reuse is a no-op where SO_REUSEPORT does not exist (Windows shares a
// UDP port with SO_REUSEADDR, which Go sets on multicast listeners).
func reuse(_, _ string, _ syscall.RawConn) error { return nil }
