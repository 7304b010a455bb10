// Package errcode is the one table of the errors that cross the wire. Each
// sentinel has its wire code (the string a control message carries), its
// join status byte (the answer to a session-join header, see package join)
// and its QUIC application error code (CONNECTION_CLOSE and stream resets).
// A remote error decodes from any of the three.
//
// Package wire re-exports the protocol's names; the transports use the join
// statuses and QUIC codes.
package errcode

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Code is an error code that crosses the wire in control messages.
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
	CodeTooLarge     Code = "too_large"
	CodePaused       Code = "paused"
	CodeExpired      Code = "expired"
	// CodeGoingAway: Ferry is closing on this device (Engine.Close, the app
	// or the CLI quitting), so the session ends; the peer reads it as the
	// device going away (a result's CodeConnectionLost), not as a failure
	// of its files. Ferry before it reads it as an unknown code: over
	// QUIC as CodeIO (FromApp), on the control stream as a code it has no
	// words for; either way the transfer fails as it did before.
	CodeGoingAway Code = "going_away"

	// Join refusals (see package join). They end a connection before any
	// control stream exists, so no control message carries them; they have
	// wire codes so that every row of the table has all three names.
	CodeUnknownSession Code = "unknown_session"
	CodePeerMismatch   Code = "peer_mismatch"
	CodeSessionFull    Code = "session_full"
	CodeListenerBusy   Code = "listener_busy"
	CodeBadHeader      Code = "bad_header"
	CodeNotReceiving   Code = "not_receiving"
)

// CodeConnectionLost is the code of a transfer's result when the other
// device went away without a word (killed, asleep, out of range). It never
// crosses the wire, so it has no row, but results carry it beside the
// table's codes (engine.Result.Code) and the UI names it.
const CodeConnectionLost Code = "connection_lost"

// CodeNotPaired is the code of a transfer's result when pairing ended
// without trust: a user said the two screens show different codes, or did
// not confirm them. Like CodeConnectionLost it is a result's code only: the
// peer is told with CodeUntrusted, as Ferry always did, and reads such a
// refusal during pairing as this (engine/pair.go). It is not the receiver's
// trust policy, and its words must not say so.
const CodeNotPaired Code = "not_paired"

// CodePairedBefore is the code of a transfer's result when pairing again
// with a device paired before ended without a confirmed code: the devices
// stay paired as they were (the session proved the paired key), so it is
// not CodeNotPaired, whose words say they are not. A result's code only,
// as CodeNotPaired is.
const CodePairedBefore Code = "paired_before"

// Sentinel errors of the protocol.
var (
	ErrDeclined     = errors.New("the receiver declined")
	ErrNoSpace      = errors.New("not enough space on the receiver")
	ErrBadName      = errors.New("a file name was refused")
	ErrProtocol     = errors.New("protocol violation")
	ErrVerifyFailed = errors.New("verification failed")
	ErrCancelled    = errors.New("cancelled")
	ErrIO           = errors.New("read or write error")
	ErrUntrusted    = errors.New("the receiver only accepts files from trusted devices")
	ErrTimeout      = errors.New("no answer in time")
	ErrBusy         = errors.New("the receiver is busy")
	ErrVersion      = errors.New("incompatible protocol version")
	ErrTooLarge     = errors.New("the offer is larger than the receiver takes in one transfer")
	ErrPaused       = errors.New("paused")
	ErrExpired      = errors.New("the offer was not answered in time")
	ErrGoingAway    = errors.New("the other device is closing Ferry")
)

// ErrRefused is wrapped by every join refusal: the listener would not let a
// connection start or join a session.
var ErrRefused = errors.New("connection refused by peer")

// Join refusals; each wraps ErrRefused.
var (
	ErrUnknownSession = fmt.Errorf("%w: unknown session", ErrRefused)
	ErrPeerMismatch   = fmt.Errorf("%w: certificate differs from the session's", ErrRefused)
	ErrSessionFull    = fmt.Errorf("%w: too many connections in session", ErrRefused)
	ErrListenerBusy   = fmt.Errorf("%w: listener busy", ErrRefused)
	ErrBadHeader      = fmt.Errorf("%w: bad join header", ErrRefused)
	ErrNotReceiving   = fmt.Errorf("%w: the receiver is not taking new transfers", ErrRefused)
)

// Status is the one byte a listener answers to a join header.
type Status byte

// StatusOK admits the connection; every other status is a refusal in the table.
const StatusOK Status = 0

// App is a QUIC application error code (CONNECTION_CLOSE, RESET_STREAM,
// STOP_SENDING).
type App uint64

// Application codes outside the table.
const (
	// AppNone closes a connection normally.
	AppNone App = 0
	// AppLegacy is what Ferry used before this table for every error, with
	// "code:message" as the reason; it is still understood.
	AppLegacy App = 1
	// AppStreamAborted resets a stream that its side gave up on (Stream.Abort).
	AppStreamAborted App = 2
)

// row is one line of the table.
type row struct {
	code   Code
	err    error
	status Status // StatusOK: not a join refusal
	app    App
}

// table is in CodeOf's order: an error wrapping two sentinels gets the code
// of the first one listed.
var table = []row{
	{CodeCancelled, ErrCancelled, StatusOK, 0x10},
	{CodeDeclined, ErrDeclined, StatusOK, 0x11},
	{CodeUntrusted, ErrUntrusted, StatusOK, 0x12},
	{CodeBusy, ErrBusy, StatusOK, 0x13},
	{CodeTimeout, ErrTimeout, StatusOK, 0x14},
	{CodeNoSpace, ErrNoSpace, StatusOK, 0x15},
	{CodeBadName, ErrBadName, StatusOK, 0x16},
	{CodeVersion, ErrVersion, StatusOK, 0x17},
	{CodeProtocol, ErrProtocol, StatusOK, 0x18},
	{CodeVerifyFailed, ErrVerifyFailed, StatusOK, 0x19},
	{CodeIO, ErrIO, StatusOK, 0x1a},
	{CodeTooLarge, ErrTooLarge, StatusOK, 0x1b},
	{CodePaused, ErrPaused, StatusOK, 0x1c},
	{CodeExpired, ErrExpired, StatusOK, 0x1d},
	{CodeGoingAway, ErrGoingAway, StatusOK, 0x1e},

	{CodeUnknownSession, ErrUnknownSession, 1, 0x21},
	{CodePeerMismatch, ErrPeerMismatch, 2, 0x22},
	{CodeSessionFull, ErrSessionFull, 3, 0x23},
	{CodeListenerBusy, ErrListenerBusy, 4, 0x24},
	{CodeBadHeader, ErrBadHeader, 5, 0x25},
	{CodeNotReceiving, ErrNotReceiving, 6, 0x26},
}

func byCode(c Code) (row, bool) {
	for _, r := range table {
		if r.code == c {
			return r, true
		}
	}
	return row{}, false
}

// RemoteError is an error the peer reported, with its own words.
type RemoteError struct {
	Code   Code
	Reason string
}

func (e *RemoteError) Error() string {
	base := "the peer reported an error"
	if r, ok := byCode(e.Code); ok {
		base = r.err.Error()
	}
	switch {
	case e.Reason == "" || e.Reason == base:
		return base
	case strings.HasPrefix(e.Reason, base+": "):
		return e.Reason // a peer that put its code's words first already
	}
	return fmt.Sprintf("%s: %s", base, e.Reason)
}

// Unwrap lets errors.Is match the code's sentinel.
func (e *RemoteError) Unwrap() error {
	r, _ := byCode(e.Code)
	return r.err
}

// Sentinel returns the sentinel of a code (nil for a code not in the table).
func Sentinel(c Code) error {
	r, _ := byCode(c)
	return r.err
}

// WithCode is err, told to the peer with code c: for an error whose code is
// not that of a sentinel it wraps (a user's cancel, a mismatched pairing
// code). Its message and what errors.Is finds are err's.
func WithCode(c Code, err error) error { return &coded{code: c, err: err} }

type coded struct {
	code Code
	err  error
}

func (e *coded) Error() string { return e.err.Error() }
func (e *coded) Unwrap() error { return e.err }

// MaxReason bounds the reason a connection close carries (QUIC sends it in
// one CONNECTION_CLOSE frame), and so the words of a Cancel: a reason that
// must arrive whole (a refusal that names a file) is made to fit it.
const MaxReason = 200

// Reason is what closing a connection because of err tells the peer in
// words: its message within MaxReason bytes ("" for nil), cut at a word
// with an ellipsis (Clip).
func Reason(err error) string {
	if err == nil {
		return ""
	}
	return Clip(err.Error(), MaxReason)
}

// Clip returns s when it has at most n bytes, else its start ending in
// "…", n bytes at most in all: cut after a word (at a space in its second
// half), else at a character, never inside one. A reason cut mid-word read
// as if whole ("limit." for "limit 64.").
func Clip(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	if n < len(ellipsis) {
		return ""
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(s[:cut+1], ' '); sp > cut/2 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ,;:") + ellipsis
}

// CodeOf returns the wire code for err (CodeIO when nothing more specific
// fits): the code WithCode gave it, a remote error's own, else the first
// sentinel of the table it wraps.
func CodeOf(err error) Code {
	var c *coded
	if errors.As(err, &c) {
		return c.code
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Code
	}
	for _, r := range table {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	return CodeIO
}

// AppOf returns the QUIC application code of a wire code (that of CodeIO for
// a code not in the table).
func AppOf(c Code) App {
	if r, ok := byCode(c); ok {
		return r.app
	}
	r, _ := byCode(CodeIO)
	return r.app
}

// FromApp decodes a connection close or stream reset the peer sent: the
// sentinel of a join refusal, a *RemoteError for a protocol code, nil for
// AppNone. reason is the peer's message.
func FromApp(app App, reason string) error {
	switch app {
	case AppNone:
		return nil
	case AppLegacy:
		code, msg, ok := strings.Cut(reason, ":")
		if !ok {
			return &RemoteError{Code: CodeIO, Reason: reason}
		}
		return &RemoteError{Code: Code(code), Reason: msg}
	}
	for _, r := range table {
		if r.app != app {
			continue
		}
		if r.status != StatusOK {
			return r.err
		}
		return &RemoteError{Code: r.code, Reason: reason}
	}
	return &RemoteError{Code: CodeIO, Reason: fmt.Sprintf("error code %#x: %s", uint64(app), reason)}
}

// StatusOf returns the join status for a refusal (StatusOK for nil, and the
// status of ErrBadHeader for an error that is no join refusal).
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	for _, r := range table {
		if r.status != StatusOK && errors.Is(err, r.err) {
			return r.status
		}
	}
	r, _ := byCode(CodeBadHeader)
	return r.status
}

// FromStatus decodes a listener's answer to a join header: nil for
// StatusOK, else the refusal's sentinel.
func FromStatus(st Status) error {
	if st == StatusOK {
		return nil
	}
	for _, r := range table {
		if r.status == st {
			return r.err
		}
	}
	return fmt.Errorf("%w: status %d", ErrRefused, st)
}

// AppOfErr returns the QUIC application code that closes a connection
// because of err: AppNone for nil, a join refusal's own code, else the code
// of CodeOf(err).
func AppOfErr(err error) App {
	if err == nil {
		return AppNone
	}
	return AppOf(CodeOf(err))
}
