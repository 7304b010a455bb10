//go:build !windows

package core

import "syscall"

// droppedErrnos are the errors of a socket whose connection broke under it.
var droppedErrnos = map[syscall.Errno]bool{
	syscall.ECONNRESET: true, syscall.ECONNABORTED: true, syscall.EPIPE: true, syscall.ETIMEDOUT: true,
}
