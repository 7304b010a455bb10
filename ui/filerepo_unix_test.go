//go:build unix

package ui

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
)

// TestNamedPipeIsNotOpenedBySendFiles: Fyne's file dialog (where no desktop
// portal runs) opens each listed file of no known extension to guess its
// type, and the picked file to hand it over; opening a named pipe blocks
// until something writes to it, on the Fyne goroutine, and the window
// froze for good in a folder holding one (seen under Xvfb, the goroutine
// dump in FileIcon.lookupIcon -> uri.MimeType -> os.Open). Fyne's file
// repository now refuses to read such a file without opening it, and a
// pick of one says what it is.
func TestNamedPipeIsNotOpenedBySendFiles(t *testing.T) {
	u, _, _ := newTestUI(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Something writing to it, so that this test cannot hang on the code
	// before the fix (its open returned then, with a reader).
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("a line\n"); err != nil {
		t.Fatal(err)
	}
	r, err := storage.Reader(storage.NewFileURI(fifo))
	var sp *specialFileError
	if !errors.As(err, &sp) {
		if r != nil {
			r.Close()
		}
		t.Fatalf("Fyne's repository read a named pipe: %v, %v", r, err)
	}
	if ok, _ := storage.CanRead(storage.NewFileURI(fifo)); ok {
		t.Error("CanRead says yes for a named pipe")
	}
	if r, err := storage.Reader(storage.NewFileURI(filepath.Join(dir, "notes"))); err != nil {
		t.Fatalf("a regular file: %v", err)
	} else {
		r.Close()
	}
	w.Close()

	// The pick says what the file is, and sends nothing.
	sent := false
	u.picked(nil, err, func([]string) { sent = true })
	txt := renderedText(u.win.Canvas().Overlays().Top())
	if sent || !strings.Contains(txt, "Not a regular file") || !strings.Contains(txt, "pipe is a named pipe (FIFO), not a regular file or folder") {
		t.Fatalf("picked a named pipe: sent %v, the window shows:\n%s", sent, txt)
	}
	u.escape()

	// Fyne's dialog lists the folder, nobody writing to the pipe now: it
	// draws every item, the pipe's icon included, without opening it.
	d := dialog.NewFileOpen(func(fyne.URIReadCloser, error) {}, u.win)
	l, err := storage.ListerForURI(storage.NewFileURI(dir))
	if err != nil {
		t.Fatal(err)
	}
	d.SetLocation(l)
	u.showFileDialog(d)
	u.win.Canvas().Content().Refresh()
	_ = u.win.Canvas().Capture()
	d.Hide()
}
