package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/notices"
)

// The licences text names Ferry's licence and every module this binary
// links, and carries the installed texts when they are there.
func TestLicencesText(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "ferry")
	text := licencesText(exe)
	for _, want := range []string{"Apache License 2.0", "Go standard library and runtime", "came without the licence texts"} {
		if !strings.Contains(text, want) {
			t.Errorf("licences text lacks %q", want)
		}
	}
	// (A test binary's build info lists no modules; the packaging tests
	// check a release binary's against its THIRD_PARTY_LICENSES.)
	for _, m := range notices.Modules() {
		if !strings.Contains(text, "  "+m.Path+" "+m.Version+"\n") {
			t.Errorf("licences text lacks module %s %s", m.Path, m.Version)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "THIRD_PARTY_LICENSES"), []byte("MIT License text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text := licencesText(exe); !strings.Contains(text, "MIT License text") || strings.Contains(text, "came without") {
		t.Errorf("installed texts not shown:\n%s", text)
	}
}

// Settings has the licence line, and its button opens the licences dialog.
func TestSettingsShowLicence(t *testing.T) {
	u, _, _ := newTestUI(t)
	var line *fyne.Container
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *container.Scroll:
			walk(x.Content)
		case *container.AppTabs:
			for _, it := range x.Items {
				walk(it.Content)
			}
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *widget.Form:
			for _, it := range x.Items {
				if c, ok := it.Widget.(*fyne.Container); ok && it.Text == "Licence" {
					line = c
				}
			}
		}
	}
	walk(u.settings.obj)
	if line == nil {
		t.Fatal("the Settings tab has no Licence line")
	}
	var btn *button
	for _, o := range line.Objects {
		if b, ok := o.(*button); ok {
			btn = b
		}
	}
	if btn == nil {
		t.Fatal("the Licence line has no button")
	}
	before := len(u.modals)
	test.Tap(btn)
	if len(u.modals) != before+1 {
		t.Errorf("tapping %q opened %d dialogs, want 1", btn.Text, len(u.modals)-before)
	}
}
