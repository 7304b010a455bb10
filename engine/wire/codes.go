package wire

import "github.com/ferrydrop/ferry/engine/internal/errcode"

// Code is an error code that crosses the wire. Each maps to one sentinel
// error; the mapping lives in one table (package engine/internal/errcode),
// which also gives each its join status and QUIC application code.
type Code = errcode.Code

// Wire error codes.
const (
	CodeDeclined     = errcode.CodeDeclined
	CodeNoSpace      = errcode.CodeNoSpace
	CodeBadName      = errcode.CodeBadName
	CodeProtocol     = errcode.CodeProtocol
	CodeVerifyFailed = errcode.CodeVerifyFailed
	CodeCancelled    = errcode.CodeCancelled
	CodeIO           = errcode.CodeIO
	CodeUntrusted    = errcode.CodeUntrusted
	CodeTimeout      = errcode.CodeTimeout
	CodeBusy         = errcode.CodeBusy
	CodeVersion      = errcode.CodeVersion
	CodeTooLarge     = errcode.CodeTooLarge
	CodePaused       = errcode.CodePaused
	CodeExpired      = errcode.CodeExpired
	CodeGoingAway    = errcode.CodeGoingAway
)

// CodeConnectionLost is a transfer result's code when the other device went
// away without a word; it never crosses the wire (package errcode).
const CodeConnectionLost = errcode.CodeConnectionLost

// CodeNotPaired is a transfer result's code when pairing ended without
// trust (the codes differed or were not confirmed); it never crosses the
// wire (package errcode).
const CodeNotPaired = errcode.CodeNotPaired

// CodePairedBefore is a transfer result's code when pairing again with a
// device paired before ended without a confirmed code: the devices stay
// paired as they were. It never crosses the wire (package errcode).
const CodePairedBefore = errcode.CodePairedBefore

// Sentinel errors for the codes.
var (
	ErrDeclined     = errcode.ErrDeclined
	ErrNoSpace      = errcode.ErrNoSpace
	ErrBadName      = errcode.ErrBadName
	ErrVerifyFailed = errcode.ErrVerifyFailed
	ErrCancelled    = errcode.ErrCancelled
	ErrIO           = errcode.ErrIO
	ErrUntrusted    = errcode.ErrUntrusted
	ErrTimeout      = errcode.ErrTimeout
	ErrBusy         = errcode.ErrBusy
	ErrVersion      = errcode.ErrVersion
	ErrTooLarge     = errcode.ErrTooLarge
	ErrPaused       = errcode.ErrPaused
	ErrExpired      = errcode.ErrExpired
	ErrGoingAway    = errcode.ErrGoingAway
	// ErrProtocol marks a peer that broke the protocol; it wraps the detail.
	ErrProtocol = errcode.ErrProtocol
)

// RemoteError is an error the peer reported, with its own words.
type RemoteError = errcode.RemoteError

// CodeOf returns the wire code for err (CodeIO when nothing more specific fits).
func CodeOf(err error) Code { return errcode.CodeOf(err) }
