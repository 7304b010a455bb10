package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

// A device name is what other devices show and what they check in the
// hello: one they would refuse is refused here, in words, where it is
// chosen. A name of 300 bytes made every send fail "Hello: protocol
// violation: device name is 300 bytes, over the 255 limit".
func TestCheckName(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // "" when the name is fine
	}{
		{"Anna's laptop", ""},
		{"ノートパソコン", ""},
		{strings.Repeat("a", 255), ""},
		{strings.Repeat("ä", 127), ""}, // 254 bytes
		{"", "empty"},
		{"   ", "empty"},
		{strings.Repeat("a", 256), "256 bytes long; other devices take at most 255"},
		{strings.Repeat("ä", 150), "300 bytes long"},
		{"Anna\xffBob", "not valid text"},
		// Passed on (peers show them escaped), refused where typed (below).
		{"Anna\nBob", ""},
	} {
		err := CheckName(c.name)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.name, err, c.want)
		}
	}
}

// A name typed for this device holds no character other devices would
// show escaped or not at all.
func TestInvisibleIn(t *testing.T) {
	for name, want := range map[string]string{
		"Anna's laptop": "",
		"ノートパソコン":       "",
		"Anna\nBob":     "invisible character (U+000A)",
		"Anna\u202eBob": "invisible character (U+202E)", // a bidi override turns the rest around
		"Anna\u200bBob": "invisible character (U+200B)",
		"\x1b[31mEVIL":  "invisible character (U+001B)",
	} {
		err := InvisibleIn(name)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", name, err, want)
		}
	}
}

func TestNameTheOthersTake(t *testing.T) {
	if _, err := New(Options{ConfigDir: t.TempDir(), Name: strings.Repeat("ä", 150)}); err == nil || !strings.Contains(err.Error(), "300 bytes") {
		t.Fatalf("New with a name of 300 bytes: %v", err)
	}
	recv := startReceiver(t, Options{})
	longest := strings.Repeat("ä", 127) + "a" // 255 bytes
	send := testEngine(t, Options{Name: longest})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1000)
	results := resultsOf(t, recv, Receiving, 1)
	if r := sendWait(t, send, target(recv), []string{src}, SendOptions{}); r.State != StateDone {
		t.Fatalf("send under the longest name: %s %q", r.State, r.Err)
	}
	if got := next(t, results); got.State != StateDone {
		t.Fatalf("received: %+v", got)
	}
	if err := send.SetName(longest + "a"); err == nil || send.Name() != longest {
		t.Errorf("SetName of 256 bytes: %v, name now %d bytes", err, len(send.Name()))
	}
}
