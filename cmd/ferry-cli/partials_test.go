package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPartialsCommand(t *testing.T) {
	cfg := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"partials", "--config", cfg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "0 unfinished transfer(s)") {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"partials", "--config", cfg, "--discard", "nope"}, &out, &errOut); code != 1 {
		t.Fatalf("discarding an unknown key: exit %d", code)
	}
	if !strings.Contains(errOut.String(), "no unfinished transfer") {
		t.Errorf("error %q", errOut.String())
	}
}
