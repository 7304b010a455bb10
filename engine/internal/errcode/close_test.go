package errcode

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// WithCode gives an error the code it tells the peer, over what it wraps;
// its message and its sentinels stay its own.
func TestWithCode(t *testing.T) {
	userCancel := errors.New("cancelled by the user")
	stopped := fmt.Errorf("%w: receiving was turned off", userCancel)
	err := WithCode(CodeCancelled, stopped)
	if CodeOf(err) != CodeCancelled || AppOfErr(err) != AppOf(CodeCancelled) {
		t.Fatalf("code %q, app %#x", CodeOf(err), AppOfErr(err))
	}
	if !errors.Is(err, userCancel) || err.Error() != stopped.Error() {
		t.Fatalf("WithCode changed the error: %v", err)
	}
	// Over a sentinel of another code, and over a remote error.
	if got := CodeOf(WithCode(CodeUntrusted, fmt.Errorf("%w: x", ErrCancelled))); got != CodeUntrusted {
		t.Errorf("over a sentinel: %q", got)
	}
	if got := CodeOf(WithCode(CodeBusy, &RemoteError{Code: CodeIO})); got != CodeBusy {
		t.Errorf("over a remote error: %q", got)
	}
	// What the peer decodes from the close is the code and the words.
	back := FromApp(AppOfErr(err), Reason(err))
	var re *RemoteError
	if !errors.As(back, &re) || re.Code != CodeCancelled || re.Reason != stopped.Error() {
		t.Fatalf("the peer reads %v", back)
	}
	// A join refusal keeps its own code and decodes to its sentinel.
	if got := FromApp(AppOfErr(ErrNotReceiving), Reason(ErrNotReceiving)); !errors.Is(got, ErrNotReceiving) {
		t.Fatalf("refusal reads %v", got)
	}
}

func TestReason(t *testing.T) {
	if Reason(nil) != "" || AppOfErr(nil) != AppNone {
		t.Fatal("nil closes normally, without words")
	}
	long := errors.New(strings.Repeat("é", 150)) // 300 bytes
	r := Reason(long)
	if len(r) > MaxReason || !utf8.ValidString(r) || !strings.HasSuffix(r, "…") ||
		!strings.HasPrefix(long.Error(), strings.TrimSuffix(r, "…")) || len(r) < MaxReason-4 {
		t.Fatalf("Reason cut to %d bytes (valid %v): %q", len(r), utf8.ValidString(r), r)
	}
	if short := errors.New("a file name was refused: a/b: 72 levels deep, limit 64"); Reason(short) != short.Error() {
		t.Fatalf("a reason that fits is cut: %q", Reason(short))
	}
}

// A reason too long to carry is cut after a word, with an ellipsis that
// says it was: cut in the middle of a word, "limit 64" read as a whole
// "limit".
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"fits", 4, "fits"},
		{"", 0, ""},
		{"72 levels deep, limit 64", 20, "72 levels deep…"},
		{"72 levels deep, limit 64", 23, "72 levels deep…"},
		{"72 levels deep, limit 640", 24, "72 levels deep, limit…"},
		{"aaaaaaaaaaaaaaaaaaaa", 10, "aaaaaaa…"},
		{"a aaaaaaaaaaaaaaaaaaa", 10, "a aaaaa…"}, // a space early on: the word is cut instead
		{"ééééé", 6, "é…"},
		{"ééééé", 7, "éé…"},
		{"abc", 2, ""},
		{"abcd", 3, "…"},
	} {
		got := Clip(tc.s, tc.n)
		if got != tc.want || len(got) > max(tc.n, 0) || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// connection_lost is a result's code, never the wire's: no row decodes to
// it and CodeOf never gives it.
// So are not_paired (a pairing that ended without trust) and paired_before.
func TestConnectionLostIsNoRow(t *testing.T) {
	for _, c := range []Code{CodeConnectionLost, CodeNotPaired, CodePairedBefore} {
		if _, ok := byCode(c); ok {
			t.Fatalf("%s has a row", c)
		}
		if Sentinel(c) != nil {
			t.Fatalf("%s has a sentinel", c)
		}
	}
}
