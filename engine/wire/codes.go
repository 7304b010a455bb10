package wire

import (
	"errors"
	"fmt"
)

// Code is an error code that crosses the wire. Each maps to one sentinel
// error; this file is the only place where the mapping lives.
type Code string

// Wire error codes.
const (
	CodeDeclined     Code = "declined"
	CodeNoSpace      Code = "no_space"
	CodeBadName      Code = "bad_name"
	CodeProtocol     Code = "protocol"
	CodeVerifyFailed Code = "verify_failed"
	CodeCancelled    Code = "cancelled"
	CodeIO           Code = "io"
	CodeUntrusted    Code = "untrusted"
	CodeTimeout      Code = "timeout"
	CodeBusy         Code = "busy"
	CodeVersion      Code = "version"
)

// Sentinel errors for the codes.
var (
	ErrDeclined     = errors.New("the receiver declined")
	ErrNoSpace      = errors.New("not enough space on the receiver")
	ErrBadName      = errors.New("a file name was refused")
	ErrVerifyFailed = errors.New("verification failed")
	ErrCancelled    = errors.New("cancelled")
	ErrIO           = errors.New("read or write error")
	ErrUntrusted    = errors.New("the receiver only accepts files from trusted devices")
	ErrTimeout      = errors.New("no answer in time")
	ErrBusy         = errors.New("the receiver is busy")
	ErrVersion      = errors.New("incompatible protocol version")
)

var codeErr = map[Code]error{
	CodeDeclined: ErrDeclined, CodeNoSpace: ErrNoSpace, CodeBadName: ErrBadName,
	CodeProtocol: ErrProtocol, CodeVerifyFailed: ErrVerifyFailed, CodeCancelled: ErrCancelled,
	CodeIO: ErrIO, CodeUntrusted: ErrUntrusted, CodeTimeout: ErrTimeout, CodeBusy: ErrBusy,
	CodeVersion: ErrVersion,
}

var codeOrder = []Code{CodeCancelled, CodeDeclined, CodeUntrusted, CodeBusy, CodeTimeout, CodeNoSpace,
	CodeBadName, CodeVersion, CodeProtocol, CodeVerifyFailed, CodeIO}

// RemoteError is an error the peer reported, with its own words.
type RemoteError struct {
	Code   Code
	Reason string
}

func (e *RemoteError) Error() string {
	base := "the peer reported an error"
	if s, ok := codeErr[e.Code]; ok {
		base = s.Error()
	}
	if e.Reason != "" && e.Reason != base {
		return fmt.Sprintf("%s: %s", base, e.Reason)
	}
	return base
}

// Unwrap lets errors.Is match the code's sentinel.
func (e *RemoteError) Unwrap() error { return codeErr[e.Code] }

// CodeOf returns the wire code for err (CodeIO when nothing more specific fits).
func CodeOf(err error) Code {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Code
	}
	// In a fixed order, so an error wrapping two sentinels always gets the same code.
	for _, c := range codeOrder {
		if errors.Is(err, codeErr[c]) {
			return c
		}
	}
	return CodeIO
}
