package errcode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestTableDistinct: codes, statuses and application codes are one-to-one
// with the sentinels, so decoding never depends on order.
func TestTableDistinct(t *testing.T) {
	codes, statuses, apps := map[Code]bool{}, map[Status]bool{}, map[App]bool{}
	for _, r := range table {
		if codes[r.code] || apps[r.app] || (r.status != StatusOK && statuses[r.status]) {
			t.Errorf("row %s repeats a code, status or application code", r.code)
		}
		codes[r.code], apps[r.app] = true, true
		if r.status != StatusOK {
			statuses[r.status] = true
		}
		switch r.app {
		case AppNone, AppLegacy, AppStreamAborted:
			t.Errorf("row %s uses reserved application code %d", r.code, r.app)
		}
		for _, o := range table {
			if o.code != r.code && errors.Is(r.err, o.err) {
				t.Errorf("sentinel of %s matches that of %s", r.code, o.code)
			}
		}
	}
}

// TestDecodeFromEveryName: a remote error decodes to its sentinel from its
// wire code, its QUIC application code and (refusals) its join status.
func TestDecodeFromEveryName(t *testing.T) {
	for _, r := range table {
		wrapped := fmt.Errorf("outer: %w", r.err)
		if got := CodeOf(wrapped); got != r.code {
			t.Errorf("CodeOf(%v) = %s, want %s", r.err, got, r.code)
		}
		if !errors.Is(&RemoteError{Code: r.code}, r.err) {
			t.Errorf("RemoteError{%s} does not match its sentinel", r.code)
		}
		if got := AppOfErr(wrapped); got != r.app {
			t.Errorf("AppOfErr(%v) = %#x, want %#x", r.err, got, r.app)
		}
		if err := FromApp(r.app, "why"); !errors.Is(err, r.err) {
			t.Errorf("FromApp(%#x) = %v, want %v", r.app, err, r.err)
		}
		if r.status == StatusOK {
			var re *RemoteError
			if err := FromApp(r.app, "why"); !errors.As(err, &re) || re.Reason != "why" {
				t.Errorf("FromApp(%#x) lost the reason: %v", r.app, err)
			}
			continue
		}
		if !errors.Is(r.err, ErrRefused) {
			t.Errorf("refusal %s does not wrap ErrRefused", r.code)
		}
		if got := StatusOf(wrapped); got != r.status {
			t.Errorf("StatusOf(%v) = %d, want %d", r.err, got, r.status)
		}
		if err := FromStatus(r.status); err != r.err {
			t.Errorf("FromStatus(%d) = %v, want %v", r.status, err, r.err)
		}
	}
	if FromApp(AppNone, "") != nil || FromStatus(StatusOK) != nil || AppOfErr(nil) != AppNone || StatusOf(nil) != StatusOK {
		t.Error("the normal end decodes as an error")
	}
	// Ferry before the table closed with code 1 and "code:message".
	if err := FromApp(AppLegacy, "no_space:3 GB needed"); !errors.Is(err, ErrNoSpace) || err.Error() != ErrNoSpace.Error()+": 3 GB needed" {
		t.Errorf("legacy close decoded as %v", err)
	}
}

// hostileCloses are what a peer may put in a close or a join answer; they
// seed the fuzzers.
var hostileCloses = []struct {
	app    uint64
	reason string
	status byte
}{
	{0, "", 0},
	{1, "", 7},
	{1, "no colon", 255},
	{1, ":", 1},
	{1, "from_the_future:x", 6},
	{0x10, "\x00\xff", 0x10},
	{1 << 62, "huge", 128},
	{2, "aborted", 2},
}

func FuzzFromApp(f *testing.F) {
	for _, c := range hostileCloses {
		f.Add(c.app, c.reason, c.status)
	}
	f.Fuzz(func(t *testing.T, app uint64, reason string, status byte) {
		if err := FromApp(App(app), reason); err != nil && err.Error() == "" {
			t.Fatalf("FromApp(%#x, %q) has an empty message", app, reason)
		}
		if err := FromStatus(Status(status)); status != 0 && !errors.Is(err, ErrRefused) {
			t.Fatalf("FromStatus(%d) = %v, not a refusal", status, err)
		}
	})
}

// An error wrapping two sentinels always gets the code listed first.
func TestCodeOfOrder(t *testing.T) {
	both := fmt.Errorf("%w and %w", ErrIO, ErrCancelled)
	for range 20 {
		if got := CodeOf(both); got != CodeCancelled {
			t.Fatalf("CodeOf(io+cancelled) = %q, want cancelled", got)
		}
	}
}

// A row added later (going_away was) reaches a build without it as a code
// it does not know: over QUIC an io error with the code in its words, on
// the control stream a remote error with no sentinel. Either fails the
// transfer with the peer's words; neither is mistaken for another row.
// This build reads such codes of newer peers the same way.
func TestUnknownCodeReadsSafely(t *testing.T) {
	const newer = App(0x3f)
	if _, ok := byCode("no_such_code"); ok {
		t.Fatal("test code has a row")
	}
	for _, r := range table {
		if r.app == newer {
			t.Fatalf("%#x has a row", uint64(newer))
		}
	}
	var re *RemoteError
	got := FromApp(newer, "context canceled")
	if !errors.As(got, &re) || re.Code != CodeIO || !strings.Contains(re.Reason, "context canceled") {
		t.Errorf("QUIC: %v", got)
	}
	ctl := &RemoteError{Code: "no_such_code", Reason: "context canceled"}
	if ctl.Unwrap() != nil || Sentinel(ctl.Code) != nil || CodeOf(ctl) != "no_such_code" ||
		ctl.Error() != "the peer reported an error: context canceled" {
		t.Errorf("control stream: %v (unwraps to %v)", ctl, ctl.Unwrap())
	}
}
