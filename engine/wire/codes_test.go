package wire_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// codeCases pairs every wire code with its sentinel.
var codeCases = []struct {
	code wire.Code
	err  error
}{
	{wire.CodeDeclined, wire.ErrDeclined},
	{wire.CodeNoSpace, wire.ErrNoSpace},
	{wire.CodeBadName, wire.ErrBadName},
	{wire.CodeProtocol, wire.ErrProtocol},
	{wire.CodeVerifyFailed, wire.ErrVerifyFailed},
	{wire.CodeCancelled, wire.ErrCancelled},
	{wire.CodeIO, wire.ErrIO},
	{wire.CodeUntrusted, wire.ErrUntrusted},
	{wire.CodeTimeout, wire.ErrTimeout},
	{wire.CodeBusy, wire.ErrBusy},
	{wire.CodeVersion, wire.ErrVersion},
}

func TestRemoteErrorIs(t *testing.T) {
	for _, tc := range codeCases {
		re := &wire.RemoteError{Code: tc.code, Reason: "details"}
		if !errors.Is(re, tc.err) {
			t.Errorf("RemoteError{%s} does not match its sentinel", tc.code)
		}
		for _, other := range codeCases {
			if other.code != tc.code && errors.Is(re, other.err) {
				t.Errorf("RemoteError{%s} also matches %v", tc.code, other.err)
			}
		}
		wrapped := fmt.Errorf("send: %w", re)
		if !errors.Is(wrapped, tc.err) {
			t.Errorf("wrapped RemoteError{%s} does not match its sentinel", tc.code)
		}
		var got *wire.RemoteError
		if !errors.As(wrapped, &got) || got != re {
			t.Errorf("errors.As lost the RemoteError{%s}", tc.code)
		}
	}
	if !errors.Is(&wire.RemoteError{Code: wire.CodeNoSpace}, wire.ErrNoSpace) {
		t.Error("RemoteError{no_space} is not ErrNoSpace")
	}
	unknown := &wire.RemoteError{Code: "from_the_future", Reason: "x"}
	for _, tc := range codeCases {
		if errors.Is(unknown, tc.err) {
			t.Errorf("an unknown code matches %v", tc.err)
		}
	}
	if unknown.Error() == "" {
		t.Error("unknown code has an empty message")
	}
}

func TestRemoteErrorMessage(t *testing.T) {
	cases := []struct {
		err  *wire.RemoteError
		want string
	}{
		{&wire.RemoteError{Code: wire.CodeNoSpace}, wire.ErrNoSpace.Error()},
		{&wire.RemoteError{Code: wire.CodeNoSpace, Reason: "3 GB needed"}, wire.ErrNoSpace.Error() + ": 3 GB needed"},
		// A reason that repeats the sentinel's words is not said twice.
		{&wire.RemoteError{Code: wire.CodeBusy, Reason: wire.ErrBusy.Error()}, wire.ErrBusy.Error()},
		{&wire.RemoteError{Code: "nope"}, "the peer reported an error"},
		{&wire.RemoteError{Code: "nope", Reason: "odd"}, "the peer reported an error: odd"},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestCodeOf(t *testing.T) {
	for _, tc := range codeCases {
		if got := wire.CodeOf(tc.err); got != tc.code {
			t.Errorf("CodeOf(%v) = %s, want %s", tc.err, got, tc.code)
		}
		deep := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", tc.err))
		if got := wire.CodeOf(deep); got != tc.code {
			t.Errorf("CodeOf(wrapped %v) = %s, want %s", tc.err, got, tc.code)
		}
		if got := wire.CodeOf(&wire.RemoteError{Code: tc.code}); got != tc.code {
			t.Errorf("CodeOf(RemoteError{%s}) = %s", tc.code, got)
		}
	}
	// A remote error keeps its code even when it is one we do not know.
	if got := wire.CodeOf(fmt.Errorf("x: %w", &wire.RemoteError{Code: "from_the_future"})); got != "from_the_future" {
		t.Errorf("CodeOf(unknown remote) = %s", got)
	}
	// Protocol violations found while reading are reported as such.
	_, err := wire.ReadMessage(bytesReader([]byte{200, 0, 0, 0, 0}))
	if got := wire.CodeOf(err); got != wire.CodeProtocol {
		t.Errorf("CodeOf(ReadMessage error) = %s, want %s", got, wire.CodeProtocol)
	}
	for _, err := range []error{errors.New("anything"), io.ErrUnexpectedEOF, nil} {
		if got := wire.CodeOf(err); got != wire.CodeIO {
			t.Errorf("CodeOf(%v) = %s, want %s", err, got, wire.CodeIO)
		}
	}
}

// TestCodesDistinct guards the one-file mapping: codes and sentinels are
// one-to-one, so CodeOf cannot depend on map order.
func TestCodesDistinct(t *testing.T) {
	for i, a := range codeCases {
		for j, b := range codeCases {
			if i == j {
				continue
			}
			if a.code == b.code {
				t.Errorf("code %s listed twice", a.code)
			}
			if errors.Is(a.err, b.err) {
				t.Errorf("sentinel for %s matches the one for %s", a.code, b.code)
			}
		}
	}
}
