//go:build linux

package app

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/ui"
)

// Issue 26, finding 11: a link no browser takes says so, and xdg-open is
// waited for (no defunct child); without xdg-open the user hears at once.
func TestOpenLinkWithoutBrowserSaysSo(t *testing.T) {
	link, _ := url.Parse("https://example.org/tickets")
	bin := t.TempDir()
	// xdg-open that finds no browser exits 3 after it started.
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\necho \"$1\" > \"$0.arg\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	got := make(chan error, 1)
	open := linkOpener(func(what string, err error) {
		if what != "Could not open the link" {
			t.Errorf("problem title %q", what)
		}
		got <- err
	})
	if err := open(link); err != nil {
		t.Fatalf("open: %v", err)
	}
	select {
	case err := <-got:
		var p *ui.Problem
		if !errors.As(err, &p) || !strings.Contains(p.Text, "No web browser could open https://example.org/tickets") {
			t.Errorf("problem = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failure was never reported")
	}
	if arg, _ := os.ReadFile(filepath.Join(bin, "xdg-open.arg")); strings.TrimSpace(string(arg)) != link.String() {
		t.Errorf("xdg-open got %q", arg)
	}

	t.Setenv("PATH", t.TempDir()) // no xdg-open at all
	err := open(link)
	var p *ui.Problem
	if !errors.As(err, &p) || !strings.Contains(p.Text, "No web browser is set up") {
		t.Errorf("without xdg-open: %v", err)
	}
}
