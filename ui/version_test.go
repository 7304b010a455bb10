package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/version"
)

// The Settings tab says which build is running (the About line).
func TestSettingsShowVersion(t *testing.T) {
	u, _, _ := newTestUI(t)
	want := version.Get().Short()
	var found bool
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *container.Scroll:
			walk(x.Content)
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *widget.Form:
			for _, it := range x.Items {
				if l, ok := it.Widget.(*widget.Label); ok && it.Text == "Ferry version" && l.Text == want {
					found = true
				}
			}
		}
	}
	walk(u.settings.obj)
	if !found {
		t.Errorf("the Settings tab has no %q line saying %q", "Ferry version", want)
	}
}
