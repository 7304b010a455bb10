package app

import (
	"os"
	"runtime"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine"
)

// ShowStartError shows why the app could not start (a damaged key pair, a
// config folder it cannot write, files to send that are not there) in a
// window of its own until it is closed: started from a menu or a file
// manager, the app has no terminal where an error line would show, and it
// used to vanish without a word. Call it only when Run returned an error.
func ShowStartError(iconPNG []byte, err error) {
	if !canShowWindows() {
		return // the error line printed is all there is (ssh, a service, a test)
	}
	// A display that is set but cannot be opened makes GLFW panic: the
	// error line is printed already, the stack would only bury it.
	defer func() { _ = recover() }()
	a, _ := newFyneApp(iconPNG, nil)
	startErrorWindow(a, err, a.Quit).ShowAndRun()
}

// canShowWindows reports whether a window can be shown at all: on Linux
// and the BSDs only with an X11 or Wayland display to show it on.
func canShowWindows() bool {
	switch runtime.GOOS {
	case "windows", "darwin":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// startErrorWindow is the window ShowStartError shows: the reason as a
// sentence, and Quit (the button, Enter or Escape).
func startErrorWindow(a fyne.App, err error, quitApp func()) fyne.Window {
	w := a.NewWindow("Ferry could not start")
	head := widget.NewLabelWithStyle("Ferry could not start", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	text := widget.NewLabel(engine.Sentence(err))
	text.Wrapping = fyne.TextWrapWord
	quit := widget.NewButton("Quit", quitApp)
	quit.Importance = widget.HighImportance
	w.SetContent(container.NewBorder(head, container.NewHBox(layout.NewSpacer(), quit), nil, nil, text))
	w.Canvas().Focus(quit) // Space quits, as on a focused button
	w.Canvas().SetOnTypedKey(func(k *fyne.KeyEvent) {
		switch k.Name {
		case fyne.KeyReturn, fyne.KeyEnter, fyne.KeyEscape:
			quitApp()
		}
	})
	w.Resize(fyne.NewSize(560, 220))
	w.CenterOnScreen()
	return w
}
