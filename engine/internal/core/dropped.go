package core

import (
	"errors"
	"net"
	"syscall"

	"github.com/ferrydrop/ferry/internal/safetext"
)

// droppedError is a connection that broke under a transfer, said as the
// user reads it ("the connection to Bob's laptop was lost: connection
// reset by peer") rather than as the socket put it ("write tcp
// 192.168.1.20:55334->192.168.1.31:47800: write: connection reset by
// peer", which stays the Ending's Detail).
type droppedError struct {
	peer  string
	errno syscall.Errno
	err   error
}

func (d *droppedError) Error() string {
	return "the connection to " + d.peer + " was lost: " + d.errno.Error()
}

func (d *droppedError) Unwrap() error { return d.err }

// Dropped says err in the user's words when it is a connection that broke
// after it was made (reset, aborted, a broken pipe, timed out), and returns
// every other error as it is: a dial's failure already says that it could
// not connect, and a peer's own words are its own.
func Dropped(err error, peer string) error {
	var errno syscall.Errno
	var op *net.OpError
	if err == nil || !errors.As(err, &errno) || !droppedErrnos[errno] ||
		(errors.As(err, &op) && op.Op == "dial") || errors.As(err, new(*droppedError)) {
		return err
	}
	if peer == "" {
		peer = "the other device"
	} else {
		peer = safetext.Name(peer)
	}
	return &droppedError{peer: peer, errno: errno, err: err}
}

// detail is the technical text behind err: the socket's own words for a
// dropped connection.
func detail(err error) string {
	var d *droppedError
	if errors.As(err, &d) && d == err {
		return d.err.Error()
	}
	return err.Error()
}
