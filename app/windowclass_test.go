package app

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// titleLog is a window that records its title each time it is shown.
type titleLog struct {
	fyne.Window
	atShow []string
}

func (w *titleLog) Show() {
	w.atShow = append(w.atShow, w.Title())
	w.Window.Show()
}

// The main window is first shown titled "Ferry", the desktop entry's
// StartupWMClass: GLFW creates an X11 window at its first Show and takes its
// class (WM_CLASS) from the title then, and desktops match a window to its
// launcher by that class. It said "Ferry — <device name>", so the dock showed
// an unnamed window beside Ferry's launcher. The device's name joins the title
// once the window exists; a title asked for before that waits for it.
func TestMainWindowIsCreatedWithTheClassTitle(t *testing.T) {
	test.NewTempApp(t)
	w := &titleLog{Window: test.NewTempWindow(t, nil)}
	mw := newMainWindow(w, "Ferry — Laptop")
	if got := w.Title(); got != windowClass {
		t.Errorf("before its first Show the window is titled %q, want %q", got, windowClass)
	}
	mw.SetTitle("Ferry — Desk") // the settings saved before the window was shown
	mw.Show()
	mw.Show()
	if len(w.atShow) != 2 || w.atShow[0] != windowClass {
		t.Errorf("titles at Show: %q, want %q first", w.atShow, windowClass)
	}
	if got := w.Title(); got != "Ferry — Desk" {
		t.Errorf("after Show the window is titled %q, want %q", got, "Ferry — Desk")
	}
	mw.SetTitle("Ferry — Office")
	if got := w.Title(); got != "Ferry — Office" {
		t.Errorf("a shown window's new title: %q", got)
	}
	if windowClass != "Ferry" {
		t.Errorf("windowClass = %q: packaging/linux/io.ferrydrop.ferry.desktop says StartupWMClass=Ferry", windowClass)
	}
}
