package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// pageWheel lies over a scrolled page and hands it the mouse wheel wherever
// the pointer is. Fyne gives a wheel event to the innermost fyne.Scrollable
// under the pointer, and every Entry holds a scroller of its own (for text
// wider than the field), so over a single-line text field the wheel moved
// that field's text at most and the page stood still. pageWheel is the
// target of nothing else (taps, hover, drags, keys), so everything under it
// works as before. Only for pages whose scrollers inside are single-line
// entries: a list or a multi-line field there would lose its wheel to the
// page.
type pageWheel struct {
	widget.BaseWidget
	page *container.Scroll
}

// withPageWheel returns page with a pageWheel over it.
func withPageWheel(page *container.Scroll) fyne.CanvasObject {
	w := &pageWheel{page: page}
	w.ExtendBaseWidget(w)
	return container.NewStack(page, w)
}

// Scrolled scrolls the page.
func (w *pageWheel) Scrolled(ev *fyne.ScrollEvent) { w.page.Scrolled(ev) }

func (w *pageWheel) CreateRenderer() fyne.WidgetRenderer { return emptyRenderer{} }

// emptyRenderer draws nothing.
type emptyRenderer struct{}

func (emptyRenderer) Destroy()                     {}
func (emptyRenderer) Layout(fyne.Size)             {}
func (emptyRenderer) MinSize() fyne.Size           { return fyne.Size{} }
func (emptyRenderer) Objects() []fyne.CanvasObject { return nil }
func (emptyRenderer) Refresh()                     {}
