package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/store"
)

// The ending of a delivery whose partial data a newer delivery took over.
func TestTakenOverEnding(t *testing.T) {
	e := EndOf(ErrTakenOver, "Bob", true)
	if e.State != StateCancelled || e.Code != string(errcode.CodeCancelled) || !e.ByPeer || !strings.Contains(e.Text, "newer send") {
		t.Errorf("%+v", e)
	}
	if !errors.Is(ErrTakenOver, errcode.ErrCancelled) || errcode.CodeOf(ErrTakenOver) != errcode.CodeCancelled {
		t.Error("the older sender would not hear a cancel")
	}
}

// Every end reads in the user's words, with the table's code and who did it.
func TestEndOf(t *testing.T) {
	remote := func(c errcode.Code, reason string) error { return &errcode.RemoteError{Code: c, Reason: reason} }
	reset := fmt.Errorf("control stream: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	stalled := fmt.Errorf("tcp stream: %w: no progress for 30s", transport.ErrStreamStalled)
	silent := fmt.Errorf("control stream: the connection went silent for 10s: %w", idleTimeout{})
	nothingArrived := fmt.Errorf("%w: nothing arrived for 1m15s after the offer was accepted", errcode.ErrTimeout)
	for _, c := range []struct {
		err       error
		resumable bool
		state     State
		code      string
		byPeer    bool
		text      string
	}{
		{nil, false, StateDone, "", false, ""},
		{ErrCancelledByUser, false, StateCancelled, "cancelled", false, "Cancelled by you."},
		{ErrStoppedReceiving, false, StateCancelled, "cancelled", false, "Stopped: receiving was turned off."},
		{context.Canceled, false, StateCancelled, "cancelled", false, "Ferry was closed before the transfer finished."},
		{ErrClosed, false, StateCancelled, "cancelled", false, "Ferry was closed before the transfer finished."},
		{remote(errcode.CodeCancelled, "cancelled by the user"), false, StateCancelled, "cancelled", true, "Cancelled by Bob."},
		{remote(errcode.CodeCancelled, "out of patience"), false, StateCancelled, "cancelled", true, "Cancelled by Bob: out of patience."},
		{remote(errcode.CodeDeclined, ""), false, StateDeclined, "declined", true, "Declined by Bob."},
		{errcode.ErrDeclined, false, StateDeclined, "declined", false, "Declined by you."},
		{remote(errcode.CodeExpired, ""), false, StateDeclined, "expired", true, "Expired: Bob did not answer in time."},
		{remote(errcode.CodePaused, "paused by the sender"), false, StatePaused, "paused", true, "Paused by Bob."},
		{ErrPaused, false, StatePaused, "paused", false, "Paused."},
		{remote(errcode.CodeTooLarge, "Bob takes at most 64 KB of text"), false, StateDeclined, "too_large", true, "Declined: Bob takes at most 64 KB of text."},
		{remote(errcode.CodeBusy, ""), false, StateDeclined, "busy", true, "The receiver is busy."},
		{remote(errcode.CodeGoingAway, ""), false, StateFailed, CodeConnectionLost, true, "Bob went away: Ferry was closed there."},
		{remote(errcode.CodeGoingAway, ""), true, StateInterrupted, CodeConnectionLost, true, "Interrupted — Ferry was closed on Bob; will resume when it is back."},
		{ErrConnectionLost, true, StateInterrupted, CodeConnectionLost, false, "Interrupted — will resume when Bob is back."},
		{ErrConnectionLost, false, StateFailed, CodeConnectionLost, false, "The connection to Bob was lost."},
		// However else the connection ended under a receiver that kept what
		// arrived (Bob asleep, or this device), it waits for Bob: before,
		// these read "failed" in the socket's or the watch's words.
		{reset, true, StateInterrupted, CodeConnectionLost, false, "Interrupted — will resume when Bob is back."},
		{stalled, true, StateInterrupted, CodeConnectionLost, false, "Interrupted — will resume when Bob is back."},
		{silent, true, StateInterrupted, CodeConnectionLost, false, "Interrupted — will resume when Bob is back."},
		{nothingArrived, true, StateInterrupted, CodeConnectionLost, false, "Interrupted — will resume when Bob is back."},
		// Nothing kept: the same words as before.
		{stalled, false, StateFailed, "io", false, "Tcp stream: stream stalled: no progress for 30s."},
		// Bob's own timeout is Bob's word, not a lost connection; nor is a
		// disk's error or a file that could not be saved.
		{remote(errcode.CodeTimeout, "the verification code was not confirmed"), true, StateFailed, "timeout", true, "No answer in time: the verification code was not confirmed."},
		{fmt.Errorf("write: %w", io.ErrShortWrite), true, StateFailed, "io", false, "Write: short write."},
		{&NotSavedError{Failed: 1, Files: 2, Cause: "file too large", Here: true}, true, StateFailed, "io", false, Sentence(&NotSavedError{Failed: 1, Files: 2, Cause: "file too large", Here: true})},
		{ErrPairMismatch, false, StateFailed, "not_paired", false, Sentence(ErrPairMismatch)},
		{ErrPeerRejectedCode, false, StateFailed, "not_paired", true, "Bob did not confirm the verification code, so the devices are not paired."},
		{fmt.Errorf("write: %w", io.ErrShortWrite), false, StateFailed, "io", false, "Write: short write."},
		// The receiver's trust policy, in one sentence (Ferry's reason only says it again).
		{remote(errcode.CodeUntrusted, "this device only accepts files from trusted devices"), false, StateDeclined, "untrusted", true, "Bob only accepts files from trusted devices."},
		{remote(errcode.CodeUntrusted, "pair first"), false, StateDeclined, "untrusted", true, "Bob only accepts files from trusted devices: pair first."},
		// A refusal after the hello carries the whole error, its code's words first (an older receiver's words).
		{remote(errcode.CodeUntrusted, "the receiver only accepts files from trusted devices: this receiver has paired with another device of the same name"),
			false, StateDeclined, "untrusted", true, "Bob only accepts files from trusted devices: this receiver has paired with another device of the same name."},
		{&RefusedError{Code: errcode.CodeUntrusted, Reason: "this device only accepts files from trusted devices"}, false, StateDeclined, "untrusted", false, "Declined: this device only accepts files from trusted devices."},
		// A peer that repeats its code's words first is not read twice.
		{remote(errcode.CodeDeclined, "the receiver declined: the receiver declined an offer from this device a moment ago; try again in a few minutes"),
			false, StateDeclined, "declined", true, "Declined by Bob: the receiver declined an offer from this device a moment ago; try again in a few minutes."},
		{remote(errcode.CodeBadName, "a file name was refused: CON: a device name"), false, StateFailed, "bad_name", true, "A file name was refused: CON: a device name."},
		// A peer's words cannot act on a terminal.
		{remote(errcode.CodeCancelled, "gone\x1b[2J\nferry-cli send: done"), false, StateCancelled, "cancelled", true, `Cancelled by Bob: gone\x1b[2J\nferry-cli send: done.`},
		{remote(errcode.CodeBusy, "\u202eexe.gnp"), false, StateDeclined, "busy", true, `The receiver is busy: \u202eexe.gnp.`},
		// Errors joined (one per transport) read on one line.
		{errors.Join(errors.New("tcp: refused"), errors.New("quic: timeout")), false, StateFailed, "io", false, "Tcp: refused; quic: timeout."},
	} {
		e := EndOf(c.err, "Bob", c.resumable)
		if e.State != c.state || e.Code != c.code || e.ByPeer != c.byPeer || e.Text != c.text {
			t.Errorf("%v: %+v, want %s %q byPeer=%v %q", c.err, e, c.state, c.code, c.byPeer, c.text)
		}
		var r Result
		e.Apply(&r)
		if r.State != c.state || r.Code != c.code || r.Err != c.text {
			t.Errorf("%v: applied as %+v", c.err, r)
		}
	}
}

// idleTimeout is a transport's idle timeout as quic-go reports one: a
// net.Error that timed out.
type idleTimeout struct{}

func (idleTimeout) Error() string   { return "timeout: no recent network activity" }
func (idleTimeout) Timeout() bool   { return true }
func (idleTimeout) Temporary() bool { return false }

// TestEndOfEscapesThePeersName: a device's name is the peer's to choose; in
// the sentence it is quoted and escaped when it holds what could act on a
// terminal or disguise itself, as everywhere else it is shown.
func TestEndOfEscapesThePeersName(t *testing.T) {
	e := EndOf(&errcode.RemoteError{Code: errcode.CodeDeclined}, "\x1b[31mEVIL\x1b[0m\rX", false)
	if want := `Declined by "\x1b[31mEVIL\x1b[0m\rX".`; e.Text != want {
		t.Fatalf("%q, want %q", e.Text, want)
	}
	if e := EndOf(&errcode.RemoteError{Code: errcode.CodeDeclined}, "Bob's laptop", false); e.Text != "Declined by Bob's laptop." {
		t.Fatalf("a plain name changed: %q", e.Text)
	}
}

// Files the sender could not read end a transfer as an I/O failure of the
// sending device, on both sides.
func TestNotSentEnding(t *testing.T) {
	send := EndOf(&NotSentError{Unsent: 1, Files: 3, Here: true}, "Bob", false)
	recv := EndOf(&NotSentError{Unsent: 1, Files: 3}, "Alice", true)
	if send.State != StateFailed || send.Code != "io" || send.ByPeer ||
		send.Text != "1 of 3 files could not be read on this device, so they were not sent; the others arrived." {
		t.Errorf("sender: %+v", send)
	}
	if recv.State != StateFailed || recv.Code != "io" || !recv.ByPeer ||
		recv.Text != "1 of 3 files could not be read on the sending device, so they were not sent; the others arrived." {
		t.Errorf("receiver: %+v", recv)
	}
	if Retryable(&NotSentError{Unsent: 1, Files: 3, Here: true}) {
		t.Error("a send that met unreadable files is tried again")
	}
}

// Another key at a known address, or another device than the one asked
// for, is said in the identity check's words, not the dial's.
func TestKeyChangeEnding(t *testing.T) {
	kc := &identity.KeyChangedError{Addr: "10.0.0.2:47800", Known: identity.Peer{Name: "vm", ID: "XUQLUOXXPHE5"}}
	mm := &identity.MismatchError{}
	for _, err := range []error{kc, mm} {
		dial := fmt.Errorf("dial quic 10.0.0.2:47800: CRYPTO_ERROR 0x12a (local): %w", err)
		e := EndOf(dial, "", false)
		if e.State != StateFailed || e.Text != Sentence(err) || !strings.Contains(e.Detail, "CRYPTO_ERROR") {
			t.Errorf("%T: %+v", err, e)
		}
	}
}

// Files the receiver could not save are its disk's failure (code io: the
// app says "could not save", not "arrived damaged"), on both sides, in its
// words, and not tried again; files whose data did not match are a failed
// verification.
func TestNotSavedEnding(t *testing.T) {
	err := &NotSavedError{Failed: 2, Files: 3, Cause: "permission denied", Here: true}
	recv := EndOf(err, "Alice", false)
	if recv.State != StateFailed || recv.Code != "io" || recv.ByPeer || recv.Text != "2 of 3 files could not be saved here; the first: permission denied." {
		t.Errorf("receiver: %+v", recv)
	}
	for reason, want := range map[string]string{
		"the file could not be saved: no space left on device": "On Bob, the file could not be saved: no space left on device.",
		"none of the 2 files could be saved":                   "On Bob, none of the 2 files could be saved.",
		"2 of 3 files could not be saved":                      "On Bob, 2 of 3 files could not be saved.", // an older Ferry's words
	} {
		re := &errcode.RemoteError{Code: errcode.CodeVerifyFailed, Reason: reason}
		if send := EndOf(re, "Bob", false); send.State != StateFailed || send.Code != "io" || !send.ByPeer || send.Text != want {
			t.Errorf("sender, %q: %+v", reason, send)
		}
		if Retryable(re) {
			t.Errorf("%q is tried again", reason)
		}
	}
	bad := EndOf(&errcode.RemoteError{Code: errcode.CodeVerifyFailed, Reason: "the data of 1 of 1 files did not match what was sent"}, "Bob", false)
	if bad.Code != "verify_failed" || bad.Text != "Verification failed: the data of 1 of 1 files did not match what was sent." {
		t.Errorf("a failed verification: %+v", bad)
	}
	if Retryable(err) {
		t.Error("files that could not be saved are tried again")
	}
}

// Empty folders the receiver could not make end a transfer failed on both
// sides, in the receiver's words, and are not tried again.
func TestFoldersEnding(t *testing.T) {
	err := &FoldersError{Failed: 1, Folders: 3, First: `"a/x" (permission denied)`}
	recv := EndOf(err, "Alice", false)
	want := `1 of 3 empty folders could not be made: "a/x" (permission denied); the accepted files arrived.`
	if recv.State != StateFailed || recv.Code != "io" || recv.ByPeer || recv.Text != want {
		t.Errorf("receiver: %+v", recv)
	}
	send := EndOf(&errcode.RemoteError{Code: errcode.CodeVerifyFailed, Reason: err.Error()}, "Bob", false)
	if send.State != StateFailed || send.Code != "io" || !send.ByPeer || send.Text != "On Bob, "+want {
		t.Errorf("sender: %+v", send)
	}
	if Retryable(err) || Retryable(&errcode.RemoteError{Code: errcode.CodeVerifyFailed, Reason: err.Error()}) {
		t.Error("a transfer whose folders could not be made is tried again")
	}
	for _, c := range []struct {
		e    FoldersError
		want string
	}{
		{FoldersError{Failed: 1, Folders: 1, First: `"e" (x)`}, `the empty folder could not be made: "e" (x); the accepted files arrived`},
		{FoldersError{Failed: 2, Folders: 2, First: `"e" (x)`}, `none of the 2 empty folders could be made; the first: "e" (x); the accepted files arrived`},
		{FoldersError{Failed: 2, Folders: 5, First: `"e" (x)`}, `2 of 5 empty folders could not be made; the first: "e" (x); the accepted files arrived`},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q", c.e, got)
		}
		if send := EndOf(&errcode.RemoteError{Code: errcode.CodeVerifyFailed, Reason: c.want}, "Bob", false); send.Text != "On Bob, "+c.want+"." {
			t.Errorf("sender: %q", send.Text)
		}
	}
}

// An offer that does not fit is said with the figures and the device, not
// the receiver's folder (the sender need not learn where downloads go); an
// older receiver's reason, which named its folder, is read without it.
func TestNoSpaceEnding(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"sender", &errcode.RemoteError{Code: errcode.CodeNoSpace, Reason: "104.9 MB needed, 67.1 MB free"},
			"Not enough space on Bob: 104.9 MB needed, 67.1 MB free."},
		{"sender, an older receiver", &errcode.RemoteError{Code: errcode.CodeNoSpace, Reason: "Not enough space on /home/bob/Downloads: 104.9 MB needed, 67.1 MB free."},
			"Not enough space on Bob: 104.9 MB needed, 67.1 MB free."},
		{"sender, no figures", &errcode.RemoteError{Code: errcode.CodeNoSpace}, "Not enough space on Bob."},
		{"receiver", noSpace(&store.SpaceError{Dir: "/mnt/small", Need: 104_857_600, Free: 67_108_864}).Err(),
			"Not enough space on this device: 104.9 MB needed, 67.1 MB free."},
	} {
		e := EndOf(c.err, "Bob", false)
		if e.State != StateDeclined || e.Text != c.want || strings.Contains(e.Text, "/mnt") {
			t.Errorf("%s: %s %q, want %q", c.name, e.State, e.Text, c.want)
		}
	}
	if v := noSpace(&store.SpaceError{Dir: "/mnt/small", Need: 1, Free: 0}); strings.Contains(v.Reason, "/mnt") {
		t.Errorf("the refusal tells the sender the folder: %q", v.Reason)
	}
}

// When no file could be read, the ending does not speak of others.
func TestNotSentEndingOfEveryFile(t *testing.T) {
	for _, c := range []struct {
		e    NotSentError
		want string
	}{
		{NotSentError{Unsent: 1, Files: 1, Here: true}, "The file was not sent: it could not be read on this device."},
		{NotSentError{Unsent: 3, Files: 3}, "None of the 3 files was sent: they could not be read on the sending device."},
		// Why the first was not sent, where the sender knows it.
		{NotSentError{Unsent: 1, Files: 1, Here: true, Why: "it changed while it was being sent (send it again once it is written)"},
			"The file could not be sent: it changed while it was being sent (send it again once it is written)."},
		{NotSentError{Unsent: 3, Files: 3, Here: true, Why: "it could not be read on this device (permission denied)"},
			"None of the 3 files could be sent; the first: it could not be read on this device (permission denied)."},
		{NotSentError{Unsent: 1, Files: 3, Here: true, Why: "it could not be read on this device (permission denied)"},
			"1 of 3 files could not be sent: it could not be read on this device (permission denied); the others arrived."},
	} {
		if got := EndOf(&c.e, "Bob", false).Text; got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}

// A file over what the download folder's file system holds (a FAT32
// stick's 4 GiB) is refused with no_space, the code every Ferry knows, and
// read in its own words on both sides, not as a want of space that freeing
// some would mend ("Not enough space on the receiver: the download folder
// is on a FAT32 drive, ..."). A refusal for want of space reads as before.
func TestFileLimitRefusalSentences(t *testing.T) {
	const why = "the download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)"
	if got, want := RefusalSentence(errcode.CodeNoSpace, why), "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)."; got != want {
		t.Errorf("one file: %q, want %q", got, want)
	}
	whole := &errcode.RemoteError{Code: errcode.CodeNoSpace, Reason: "film.mkv: " + why}
	if e := EndOf(whole, "Bob", false); e.State != StateDeclined || e.Code != string(errcode.CodeNoSpace) || !e.ByPeer ||
		e.Text != "Bob cannot take film.mkv: "+why+"." {
		t.Errorf("the sender reads the offer's refusal %+v", e)
	}
	if e := EndOf(&RefusedError{Code: errcode.CodeNoSpace, Reason: "film.mkv: " + why}, "Bob", false); e.Text != "This device cannot take film.mkv: "+why+"." {
		t.Errorf("the receiver reads %+v", e)
	}
	if e := EndOf(&errcode.RemoteError{Code: errcode.CodeNoSpace, Reason: "104.9 MB needed, 67.1 MB free"}, "Bob", false); e.Text != "Not enough space on Bob: 104.9 MB needed, 67.1 MB free." {
		t.Errorf("want of space: %+v", e)
	}
	if got := RefusalSentence(errcode.CodeNoSpace, "104.9 MB needed"); got != "Not enough space on the receiver: 104.9 MB needed." {
		t.Errorf("want of space, one file: %q", got)
	}
}
