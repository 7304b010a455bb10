package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/ui"
)

// TestStartErrorIsShownInAWindow: an app that cannot start (here: its key
// pair is damaged, which it must not replace) says why in a window, in the
// engine's sentence, with Quit focused; started from a menu it used to
// vanish, the reason on a terminal nobody sees.
func TestStartErrorIsShownInAWindow(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "identity.crt"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "identity.key"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := openSettings(dir, ui.Settings{DeviceName: "test", DownloadDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	eng, _, _, err := startEngine(dir, st, nil, slog.New(slog.DiscardHandler))
	if err == nil {
		eng.Close()
		t.Fatal("started with a damaged key pair")
	}
	a := test.NewTempApp(t)
	quits := 0
	w := startErrorWindow(a, err, func() { quits++ })
	defer w.Close()
	var texts []string
	var quit *widget.Button
	walk(w.Content(), func(o fyne.CanvasObject) {
		switch o := o.(type) {
		case *widget.Label:
			texts = append(texts, o.Text)
		case *widget.Button:
			quit = o
		}
	})
	all := strings.Join(texts, "\n")
	want := "This device's key pair (identity.crt and identity.key in " + dir + ") is damaged"
	if w.Title() != "Ferry could not start" || !strings.Contains(all, want) || !strings.Contains(all, "move both away to start as a new device") {
		t.Errorf("window %q says:\n%s\nwant it to say %q", w.Title(), all, want)
	}
	if quit == nil || quit.Text != "Quit" || w.Canvas().Focused() != quit {
		t.Fatalf("Quit: %+v, focused %v", quit, w.Canvas().Focused())
	}
	test.Tap(quit)
	for _, k := range []fyne.KeyName{fyne.KeyReturn, fyne.KeyEscape, fyne.KeyA} {
		w.Canvas().OnTypedKey()(&fyne.KeyEvent{Name: k})
	}
	if quits != 3 {
		t.Errorf("Quit, Enter and Escape quit %d times, want 3 (and A none)", quits)
	}
}

// walk calls f on o and every object inside it.
func walk(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	f(o)
	if c, ok := o.(*fyne.Container); ok {
		for _, k := range c.Objects {
			walk(k, f)
		}
	}
}
