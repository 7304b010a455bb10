//go:build linux || freebsd || openbsd || netbsd

package opener

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeXDGOpen puts an xdg-open on PATH that records its argument.
func fakeXDGOpen(t *testing.T, exit int) string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "opened")
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + log + "\nexit " + string(rune('0'+exit)) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus")) // no file manager to ask
	return log
}

func TestRevealOpensTheFolderWithoutAFileManagerOnTheBus(t *testing.T) {
	log := fakeXDGOpen(t, 0)
	s, err := Reveal("/home/u/Downloads/a b.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err = Open("/home/u/Downloads/a b.jpg")
	if err != nil || s.Wait() != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	if string(got) != "/home/u/Downloads\n/home/u/Downloads/a b.jpg\n" {
		t.Fatalf("xdg-open got %q", got)
	}
}

func TestOpenerFailureIsReported(t *testing.T) {
	fakeXDGOpen(t, 3) // xdg-open's "no app for this"
	s, err := Open("/x")
	if err != nil {
		t.Fatal(err)
	}
	if s.Wait() == nil {
		t.Fatal("a failing xdg-open was not reported")
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := OpenFolder("/x"); !errors.Is(err, ErrNoOpener) || !strings.Contains(err.Error(), "xdg-open") {
		t.Fatalf("no xdg-open: %v", err)
	}
}
