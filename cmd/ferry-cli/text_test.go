package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine"
)

// send --text delivers a text, which receive prints escaped and never saves.
func TestSendText(t *testing.T) {
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	text := "meet at 8\nphoto\u202egpj.exe"
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--text", text)
	if code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "done: text delivered") {
		t.Errorf("send said %q", stdout)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive exit %d: %s", code, r.errOut)
	}
	if out := r.out.String(); !strings.Contains(out, "meet at 8\nphoto\\u202egpj.exe") || strings.Contains(out, "\u202e") {
		t.Errorf("receive did not print the text escaped:\n%s", out)
	}
	if f := r.files(t); len(f) != 0 {
		t.Errorf("a text left files: %v", f)
	}
}

// send --text - reads the text from standard input, up to the limit, less
// the one line break that ends it.
func TestSendTextFromStdin(t *testing.T) {
	// Set before the receiver starts, which reads stdin too (for its
	// prompts, none here), and put back after it ended (cleanups run last
	// first): set after, it raced with the receiver's read.
	t.Cleanup(func() { stdin = os.Stdin })
	stdin = strings.NewReader("https://example.org/some/page?x=1\n")
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--json", "--text", "-")
	if code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	if ev := lastEvent(t, stdout); ev.Result == nil || ev.Result.Text != "https://example.org/some/page?x=1" {
		t.Fatalf("last event %+v", ev)
	}
	r.wait()

	stdin = strings.NewReader(strings.Repeat("x", engine.MaxTextBytes+1))
	code, _, stderr = runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--text", "-")
	if code != 2 || !strings.Contains(stderr, "KB") {
		t.Fatalf("an oversized text: exit %d %q, want a usage error naming the limit", code, stderr)
	}
	for _, bad := range []string{"a\xff", strings.Repeat("y", engine.MaxTextBytes+1)} {
		code, _, stderr = runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--text", bad)
		if code != 2 || !strings.Contains(stderr, "send it as a file") {
			t.Fatalf("--text %.10q...: exit %d %q, want a usage error", bad, code, stderr)
		}
	}
	stdin = strings.NewReader("")
	if code, _, _ := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--text", "-"); code != 2 {
		t.Fatalf("an empty text: exit %d, want 2", code)
	}
}

// send --to A --to B --to DEAD sends to each on its own: the dead one fails,
// the others receive everything, and the exit status says one failed.
func TestSendSeveralRecipients(t *testing.T) {
	a := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	b := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	src := writeFile(t, "group.txt", "for everyone\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--retry-for", "0", "--transport", "tcp",
		"--to", a.tcp, "--to", dead, "--to", b.tcp, "--text", "see attached", src)
	if code != 1 || !strings.Contains(stderr, "1 of 3 recipients") || !strings.Contains(stderr, dead) {
		t.Fatalf("send exit %d, stderr %q; want 1 naming the dead recipient", code, stderr)
	}
	for _, want := range []string{"[" + a.tcp + "] done", "[" + b.tcp + "] done", "[" + dead + "] failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no line %q in:\n%s", want, stdout)
		}
	}
	for _, r := range []*receiver{a, b} {
		if code := r.wait(); code != 0 {
			t.Errorf("receive exit %d: %s", code, r.errOut)
		}
		got, err := os.ReadFile(filepath.Join(r.dir, "group.txt"))
		if err != nil || string(got) != "for everyone\n" {
			t.Errorf("received %q, %v", got, err)
		}
		if !strings.Contains(r.out.String(), "see attached") { // printed before --once exits
			t.Errorf("receive did not print the text:\n%s", r.out)
		}
	}
	if code, _, _ := runCLI(t, "send", "--config", t.TempDir(), "--to", a.tcp, "--to", b.tcp, "--id", a.id, src); code != 2 {
		t.Errorf("--id with several --to: exit %d, want 2", code)
	}
}

// send --to A --to NAME, where no device answers to NAME (it left, or was
// never there), still sends to A: a name not found stops none of the
// others, and the exit status says one did not receive.
func TestSendSeveralOneNameNotFound(t *testing.T) {
	a := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	src := writeFile(t, "group.txt", "for everyone\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--retry-for", "0", "--transport", "tcp",
		"--to", "Gone Laptop", "--to", a.tcp, src)
	if code != 1 || !strings.Contains(stderr, `no device called "Gone Laptop"`) || !strings.Contains(stderr, "1 of 2 recipients did not receive everything: Gone Laptop") {
		t.Errorf("send exit %d, stderr %q; want 1, saying Gone Laptop was not found", code, stderr)
	}
	if !strings.Contains(stdout, "["+a.tcp+"] done") {
		t.Fatalf("no done line for %s in:\n%s", a.tcp, stdout) // nor will receive --once end
	}
	if code := a.wait(); code != 0 {
		t.Errorf("receive exit %d: %s", code, a.errOut)
	}
	if got, err := os.ReadFile(filepath.Join(a.dir, "group.txt")); err != nil || string(got) != "for everyone\n" {
		t.Errorf("received %q, %v", got, err)
	}
}

// send --json to several devices names, in every event, the --to it
// concerns: one that was never reached has an empty peer, and its result
// was otherwise nobody's.
func TestSendSeveralJSONNamesEachRecipient(t *testing.T) {
	a := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	src := writeFile(t, "group.txt", "for everyone\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--retry-for", "0", "--transport", "tcp",
		"--to", a.tcp, "--to", dead, "--json", src)
	if code != 1 {
		t.Fatalf("send exit %d, stderr %q; want 1", code, stderr)
	}
	results := map[string]string{} // to -> state
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct {
			engine.Event
			To string `json:"to"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON event: %v: %s", err, line)
		}
		if ev.To != a.tcp && ev.To != dead {
			t.Errorf("event names no recipient (to %q): %s", ev.To, line)
		}
		if ev.Kind == engine.EventResult {
			if _, twice := results[ev.To]; twice {
				t.Errorf("a second result for %s: %s", ev.To, line)
			}
			results[ev.To] = string(ev.Result.State)
		}
	}
	if results[a.tcp] != string(engine.StateDone) || results[dead] != string(engine.StateFailed) {
		t.Errorf("results %v; want %s done and %s failed", results, a.tcp, dead)
	}
}

// Issue #27 (6): receive --accept all prints an excerpt of each text, not
// all of it (a flood of texts printed 133 MB); short texts stay whole.
func TestTextExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		whole      bool
	}{
		{"short", "meet at 8", true},
		{"lines", strings.Repeat("line\n", excerptLines-1) + "last", true},
		{"many lines", strings.Repeat("line\n", 100), false},
		{"long line", strings.Repeat("x", 10*excerptBytes), false},
		{"runes", strings.Repeat("é", excerptBytes), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := excerpt(tc.text)
			if tc.whole {
				if got != tc.text {
					t.Errorf("a short text was cut: %q", got)
				}
				return
			}
			head, _, ok := strings.Cut(got, "\n... and ")
			if !ok || !strings.HasPrefix(tc.text, head) || len(head) > excerptBytes || strings.Count(head, "\n") >= excerptLines {
				t.Errorf("excerpt of %d bytes: %q", len(tc.text), got)
			}
			if !utf8.ValidString(head) {
				t.Errorf("the excerpt cut a rune: %q", head)
			}
		})
	}
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	long := strings.Repeat("0123456789abcdef\n", 3000)
	if code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--text", long); code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	r.wait()
	if out := r.out.String(); len(out) > 4*excerptBytes || !strings.Contains(out, "more bytes") {
		t.Errorf("receive --accept all printed %d bytes for a text of %d:\n%.300s", len(out), len(long), out)
	}
}

// readText drops the one line break that ends standard input, and no more.
func TestReadTextDropsOneLineBreak(t *testing.T) {
	for in, want := range map[string]string{
		"a": "a", "a\n": "a", "a\r\n": "a", "a\n\n": "a\n", "a\r": "a\r", "\n": "", "line 1\nline 2\n": "line 1\nline 2",
	} {
		if got, err := readText(strings.NewReader(in)); err != nil || got != want {
			t.Errorf("readText(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
