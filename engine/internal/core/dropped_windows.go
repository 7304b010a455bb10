package core

import "syscall"

// droppedErrnos are the errors of a socket whose connection broke under it
// (Winsock's own numbers: syscall.ECONNRESET is not what Windows returns).
var droppedErrnos = map[syscall.Errno]bool{
	syscall.WSAECONNRESET: true, syscall.WSAECONNABORTED: true, syscall.ERROR_NETNAME_DELETED: true,
	syscall.ECONNRESET: true, syscall.ECONNABORTED: true, syscall.EPIPE: true, syscall.ETIMEDOUT: true,
}
