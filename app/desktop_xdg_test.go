//go:build linux || freebsd || openbsd || netbsd

package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/ferrydrop/ferry/ui"
)

// TestOpenFolderReportsAMissingHandler: xdg-open that finds no app for
// folders exits 3 after it started; the user hears of it.
func TestOpenFolderReportsAMissingHandler(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'xdg-open: no method available for opening' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	got := make(chan error, 1)
	open := folderOpener(nil, func(_ string, err error) { got <- err })
	dir := t.TempDir()
	if err := open(dir); err != nil {
		t.Fatalf("open: %v (the failure comes later, from the exit status)", err)
	}
	err := <-got
	var p *ui.Problem
	if !errors.As(err, &p) || !errors.Is(err, errNoOpener) || !contains(p.Text, dir) {
		t.Fatalf("reported %v, want a Problem naming %s", err, dir)
	}

	// No xdg-open at all: said at once.
	t.Setenv("PATH", t.TempDir())
	if err := open(dir); !errors.As(err, &p) || !contains(p.Text, "No app is set up to open folders") {
		t.Fatalf("without xdg-open: %v", err)
	}
}

// Only a new owner of the watcher name is a new tray host; the signals of
// notifications on the same connection (two arguments) are not, and end
// nothing (issue 26, finding 6).
func TestNewTrayHost(t *testing.T) {
	noc := "org.freedesktop.DBus.NameOwnerChanged"
	for _, c := range []struct {
		sig  *dbus.Signal
		want bool
	}{
		{&dbus.Signal{Name: noc, Body: []any{watcherName, "", ":1.42"}}, true},
		{&dbus.Signal{Name: noc, Body: []any{watcherName, ":1.42", ""}}, false}, // the host went away
		{&dbus.Signal{Name: noc, Body: []any{"org.example.Other", "", ":1.7"}}, false},
		{&dbus.Signal{Name: notifyIfc + ".ActionInvoked", Body: []any{uint32(3), "accept"}}, false},
		{&dbus.Signal{Name: notifyIfc + ".NotificationClosed", Body: []any{uint32(3), uint32(2)}}, false},
		{&dbus.Signal{Name: noc, Body: []any{watcherName, 1, 2}}, false},
		{nil, false},
	} {
		if got := newTrayHost(c.sig); got != c.want {
			t.Errorf("newTrayHost(%+v) = %v, want %v", c.sig, got, c.want)
		}
	}
}
