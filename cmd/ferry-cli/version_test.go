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
