package localsend

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors of a session, on either side. A Receiver returns ErrDeclined or
// ErrBusy (wrapped, with its reasons) to refuse an offer; the client
// returns them, wrapped in a *StatusError, when a server answers so.
var (
	// ErrDeclined: the receiver refused the offer (403).
	ErrDeclined = errors.New("declined")
	// ErrBusy: the receiver is busy with another session (409).
	ErrBusy = errors.New("busy with another transfer")
	// ErrPINRequired: the receiver asks for a PIN (401 without one).
	ErrPINRequired = errors.New("a PIN is required")
	// ErrWrongPIN: the PIN given was wrong (401 with one).
	ErrWrongPIN = errors.New("wrong PIN")
	// ErrTooManyPINs: too many wrong PINs from this address (429).
	ErrTooManyPINs = errors.New("too many wrong PINs")
	// ErrChecksum: the bytes received do not match the file's sha256 (422).
	ErrChecksum = errors.New("checksum mismatch")
	// ErrCancelled: the other side cancelled the session.
	ErrCancelled = errors.New("cancelled by the other device")
	// ErrTimeout: the session saw no activity for too long.
	ErrTimeout = errors.New("the session timed out")
	// ErrClosed: this side's server or client was closed.
	ErrClosed = errors.New("closed")
	// ErrFingerprint: the server's certificate is not the one it announced.
	ErrFingerprint = errors.New("the device's certificate does not match its fingerprint")
	// ErrSize: an upload carried more or fewer bytes than its offer said.
	ErrSize = errors.New("size differs from the offer")
	// ErrUploadCut: an upload ended before its declared size (its sender
	// stopped, or its connection broke); an ErrSize (400).
	ErrUploadCut = fmt.Errorf("%w: the upload stopped before its end", ErrSize)
	// ErrNoSpace: the receiver's disk filled under an upload (507).
	ErrNoSpace = errors.New("the receiving device ran out of space")
	// ErrStore: the receiver could not write an upload (500).
	ErrStore = errors.New("the receiving device could not save the file")
	// ErrRejected: the server refused an upload (403: bad token, address or
	// session, or the file is no longer pending).
	ErrRejected = errors.New("upload refused")
	// ErrStalled: the receiver took no byte of an upload for
	// ClientConfig.StallTimeout (asleep, out of range, gone without a word).
	ErrStalled = errors.New("the receiving device stopped taking the file")
	// ErrConnectionLost: the connection closed under a request (the
	// receiver went away, or was closed, without an answer).
	ErrConnectionLost = errors.New("the connection was lost")
)

// StatusError is a server's error answer: its HTTP status, its message,
// and the sentinel above it maps to (Unwrap), if any.
type StatusError struct {
	Op      string // the route: "prepare-upload", "upload", ...
	Status  int
	Message string // the server's own words, bounded
	err     error
}

// Error says what the server answered.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("localsend %s: %d %s", e.Op, e.Status, http.StatusText(e.Status))
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	return s
}

// Unwrap is the sentinel of the status.
func (e *StatusError) Unwrap() error { return e.err }

// statusOf maps an error of a Receiver or of an upload to its status code.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadInput), errors.Is(err, ErrSize):
		return http.StatusBadRequest
	case errors.Is(err, ErrDeclined):
		return http.StatusForbidden
	case errors.Is(err, ErrRejected):
		return http.StatusForbidden
	case errors.Is(err, ErrBusy):
		return http.StatusConflict
	case errors.Is(err, ErrChecksum):
		return http.StatusUnprocessableEntity
	case errors.Is(err, ErrNoSpace):
		return http.StatusInsufficientStorage
	case errors.Is(err, ErrTooManyPINs):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrPINRequired), errors.Is(err, ErrWrongPIN):
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// errorOf maps a server's status answer for op to a *StatusError.
func errorOf(op string, status int, msg string, hadPIN bool) error {
	e := &StatusError{Op: op, Status: status, Message: msg}
	switch status {
	case http.StatusBadRequest:
		e.err = ErrBadInput
	case http.StatusUnauthorized:
		e.err = ErrPINRequired
		if hadPIN {
			e.err = ErrWrongPIN
		}
	case http.StatusForbidden:
		e.err = ErrDeclined
		if op != "prepare-upload" {
			e.err = ErrRejected
		}
	case http.StatusConflict:
		e.err = ErrBusy
	case http.StatusInsufficientStorage:
		e.err = ErrNoSpace
	case http.StatusUnprocessableEntity:
		e.err = ErrChecksum
	case http.StatusTooManyRequests:
		e.err = ErrTooManyPINs
	}
	return e
}
