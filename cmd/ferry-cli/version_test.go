package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/version"
)

func TestVersion(t *testing.T) {
	want := "ferry-cli " + version.Get().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout, stderr, want)
		}
	}
	code, stdout, _ := runCLI(t, "version", "--json")
	var m map[string]string
	if err := json.Unmarshal([]byte(stdout), &m); code != 0 || err != nil {
		t.Fatalf("version --json: exit %d, %v: %q", code, err, stdout)
	}
	if m["version"] != version.Get().Version || m["commit"] == "" || !strings.HasPrefix(m["go"], "go") {
		t.Errorf("version --json = %v", m)
	}
	if code, _, stderr := runCLI(t, "version", "extra"); code != 2 || stderr == "" {
		t.Errorf("version extra: exit %d, stderr %q; want 2 with a message", code, stderr)
	}
}

// Help asked for goes to standard output with exit 0, so that `ferry-cli help
// | less` shows it; `help COMMAND` is that command's flags. Without a command
// the usage is an error: standard error, exit 2.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "usage: ferry-cli COMMAND") || !strings.Contains(stdout, "  send ") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, stdout, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "help", "send")
	if code != 0 || !strings.Contains(stdout, "ferry-cli send") || !strings.Contains(stdout, "-to") || stderr != "" {
		t.Errorf("help send: exit %d, stdout %q, stderr %q; want 0 and send's flags on stdout", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "help", "no-such-command"); code != 2 || !strings.Contains(stderr, "no-such-command") {
		t.Errorf("help no-such-command: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
	if code, stdout, stderr := runCLI(t); code != 2 || stdout != "" || !strings.Contains(stderr, "usage: ferry-cli COMMAND") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, stdout, stderr)
	}
}

// TestHelpSaysUsageOnce: a command's help has its usage line once (share's
// was printed twice: once by the flag package's -h, once after it).
func TestHelpSaysUsageOnce(t *testing.T) {
	for _, args := range [][]string{{"help", "share"}, {"share", "--help"}} {
		code, stdout, stderr := runCLI(t, args...)
		if n := strings.Count(stdout, "usage: ferry-cli share"); code != 0 || n != 1 || stderr != "" {
			t.Errorf("%q: exit %d, the usage %d times in stdout %q, stderr %q", args, code, n, stdout, stderr)
		}
	}
}
