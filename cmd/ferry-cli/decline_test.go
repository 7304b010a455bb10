package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine"
)

// Issue 30: an offer the receiver refuses as too large ends the send at
// once with the receiver's reason, over either transport; before, the
// sender read a broken pipe and retried for two minutes.
func TestSendRefusedAsTooLargeEndsAtOnce(t *testing.T) {
	// This receiver holds 200 KB of file lists in memory: 3000 files (32
	// bytes each) fit, the 2048 entries of the manifest's first part (67
	// bytes each, kept in memory) do not.
	t.Setenv("FERRY_MANIFEST_BUDGET", "204800")
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3000 { // two manifest parts, 60 KB of names
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("file-%05d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tp := range []string{"tcp", "quic"} {
		t.Run(tp, func(t *testing.T) {
			r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery", "--name", "Bob's laptop")
			to := r.quic
			if tp == "tcp" {
				to = r.tcp
			}
			code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", to, "--transport", tp, "--json", src)
			if code == 0 {
				t.Fatalf("send of a refused offer exited 0: %s", stdout)
			}
			line := oneLine(t, stderr, "send")
			if !strings.Contains(line, "Bob's laptop takes file lists of at most 200 KB") {
				t.Errorf("stderr %q does not give the receiver's reason", line)
			}
			ev := lastEvent(t, stdout)
			if ev.Result == nil || ev.Result.State != engine.StateDeclined {
				t.Fatalf("last event is not a declined result: %+v", ev)
			}
			for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
				var e engine.Event
				if json.Unmarshal([]byte(l), &e) == nil && e.State == engine.StateRetrying {
					t.Fatalf("the sender retried: %s", l)
				}
			}
			if code := r.wait(); code == 0 {
				t.Error("receive --once exited 0 after refusing")
			}
			if f := r.files(t); len(f) != 0 {
				t.Errorf("a refused offer left files: %v", f)
			}
		})
	}
}

// Issue 30: a send says what the folder holds that it does not carry, and
// carries its empty folders.
func TestSendSaysWhatItSkips(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(src, "link.txt")); err != nil {
		t.Fatal(err)
	}
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, src)
	if code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "not sent: 1 symbolic link (not followed) (") || strings.Contains(stdout, "not sent: 1 symbolic link (not followed), 1 empty folder") {
		t.Errorf("the send does not say what it skipped:\n%s", stdout)
	}
	// The empty folder is sent, and made.
	if !strings.Contains(stdout, "done: 1 of 1 files verified and 1 empty folder made, ") {
		t.Errorf("the send does not say the empty folder was made:\n%s", stdout)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive --once exit %d", code)
	}
	if fi, err := os.Stat(filepath.Join(r.dir, "tree", "empty")); err != nil || !fi.IsDir() {
		t.Errorf("the empty folder did not arrive: %v", err)
	}
}

// TestPeersWordsCannotActOnTheTerminal: a receiver's name is its own to
// choose, and it reaches the sender's terminal in the sentence that ends the
// send ("... only accepts files from trusted devices"). Colours, a carriage
// return or a line break in it are shown escaped, never written raw; the
// sentence says the policy once.
func TestPeersWordsCannotActOnTheTerminal(t *testing.T) {
	evil := "\x1b[31mEVIL\x1b[0m\rX\nferry-cli send: done"
	r := startReceiver(t, "", "--accept", "trusted", "--no-discovery", "--name", evil)
	file := writeFile(t, "f.txt", "x")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.tcp, file)
	if code == 0 {
		t.Fatalf("send to an untrusting receiver exited 0: %s", stdout)
	}
	for _, s := range []string{stdout, stderr} {
		if strings.ContainsAny(s, "\x1b\r") || strings.Contains(s, "\nferry-cli send: done") {
			t.Fatalf("a peer's name reached the terminal raw:\n%q", s)
		}
	}
	want := `"\x1b[31mEVIL\x1b[0m\rX\nferry-cli send: done" only accepts files from trusted devices.`
	if line := oneLine(t, stderr, "send"); !strings.Contains(line, want) {
		t.Fatalf("stderr %q; want it to say %q", line, want)
	}
}
