package app

import (
	"fyne.io/fyne/v2"
	"github.com/go-gl/glfw/v3.3/glfw" // the screen's size; Fyne's own driver uses it, and has initialised it by OnStarted
)

// screenSize is the primary screen's size in Fyne's units at scale, or
// zero when not known. Call it on the Fyne goroutine once the app runs
// (from Lifecycle's OnStarted): GLFW is initialised then.
func screenSize(scale float32) fyne.Size {
	m := glfw.GetPrimaryMonitor()
	if m == nil {
		return fyne.Size{}
	}
	mode := m.GetVideoMode()
	if mode == nil {
		return fyne.Size{}
	}
	if scale <= 0 {
		scale = 1
	}
	return fyne.NewSize(float32(mode.Width)/scale, float32(mode.Height)/scale)
}
