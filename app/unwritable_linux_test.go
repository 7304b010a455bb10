package app

import (
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
)

// TestUnwritableDownloadFolderIsSaidAtStart: a download folder that cannot
// be written when Ferry starts (a stick remounted read-only since it was
// chosen) is said in the window as receiving starts, with what to do.
// Before, nothing said it: the status line read "receiving from everyone
// nearby" while every offer was refused before its user was asked, and the
// first word of it was a red "The files could not be saved here" row after
// a sender tried. A folder that can be written says nothing.
func TestUnwritableDownloadFolderIsSaidAtStart(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, c := range []struct {
		name     string
		readOnly bool
	}{{"read-only", true}, {"writable", false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.readOnly {
				dir = readOnlyFolder(t)
			}
			b := newTestBackend(t, func(o *engine.Options) { o.DownloadDir = dir })
			a := test.NewTempApp(t)
			w := test.NewTempWindow(t, nil)
			w.Resize(fyne.NewSize(900, 600))
			u := ui.New(a, w, b, ui.Device{ID: b.eng.ID(), Name: b.eng.Name()}, ui.Options{})
			startReceiving(a, b, u, slog.New(slog.DiscardHandler))
			if !c.readOnly {
				if n := u.Describe().Dialogs; n != 0 {
					t.Fatalf("%d dialogs for a folder that can be written: %q", n, texts(w.Canvas().Overlays().Top()))
				}
				return
			}
			want := "The download folder " + dir + " cannot be written, so files sent to this device are refused before you are asked. Choose another folder in Settings, or make this one writable."
			testutil.WaitFor(t, "the message about the folder", func() bool {
				var got []string
				ui.DoAndWait(t.Context(), func() { got = texts(w.Canvas().Overlays().Top()) })
				return slices.Contains(got, want) && slices.Contains(got, "Received files cannot be saved")
			})
		})
	}
}

// readOnlyFolder is a folder files cannot be made in, even by root: a
// tmpfs mounted read-only as root, else one without write permission.
func readOnlyFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return dir
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a read-only tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// texts lists the words of the labels and dialog titles in o, widgets'
// insides included.
func texts(o fyne.CanvasObject) []string {
	var out []string
	var visit func(o fyne.CanvasObject)
	visit = func(o fyne.CanvasObject) {
		switch o := o.(type) {
		case nil:
			return
		case *widget.Label:
			out = append(out, o.Text)
		case *fyne.Container:
			for _, k := range o.Objects {
				visit(k)
			}
			return
		}
		if w, ok := o.(fyne.Widget); ok {
			for _, k := range test.WidgetRenderer(w).Objects() {
				visit(k)
			}
		}
	}
	visit(o)
	return out
}
