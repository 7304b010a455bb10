package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Keyboard use. Fyne hands a key to the focused widget and only to the
// canvas when nothing has the focus; its buttons answer Space alone and its
// dialogs no key at all. So every button and entry Ferry draws is one of the
// types below: Enter presses a button, Escape closes the topmost dialog
// wherever the focus is, and a focused button draws a ring that can be seen.
// Dialogs register on a stack (showModal) so that Escape and Enter know
// which one is on top.

// modal is a shown dialog as the keyboard sees it.
type modal struct {
	// dismiss runs on Escape: decline, cancel or close.
	dismiss func()
	// confirm runs on Enter when no button has the focus; nil does nothing.
	confirm func()
}

// showModal shows d with m on top of the keyboard stack and focuses first
// (nil leaves nothing focused, so Enter and Escape reach the canvas).
func (u *UI) showModal(d dialog.Dialog, m *modal, first fyne.Focusable) {
	u.modals = append(u.modals, m)
	d.SetOnClosed(func() { u.dropModal(m) })
	d.Show()
	if first != nil {
		u.win.Canvas().Focus(first)
	} else {
		u.win.Canvas().Unfocus()
	}
}

func (u *UI) dropModal(m *modal) {
	for i, x := range u.modals {
		if x == m {
			u.modals = append(u.modals[:i], u.modals[i+1:]...)
			return
		}
	}
}

// escape closes the topmost dialog, if any.
func (u *UI) escape() {
	if n := len(u.modals); n > 0 && u.modals[n-1].dismiss != nil {
		u.modals[n-1].dismiss()
	}
}

// enter runs the topmost dialog's default action, if it has one.
func (u *UI) enter() {
	if n := len(u.modals); n > 0 && u.modals[n-1].confirm != nil {
		u.modals[n-1].confirm()
	}
}

// typedKey is the canvas's key handler: keys nobody focused took.
func (u *UI) typedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		u.escape()
	case fyne.KeyReturn, fyne.KeyEnter:
		u.enter()
	}
}

// button is a widget.Button for the keyboard: Enter and Return press it as
// Space does, Escape goes to the topmost dialog, and it draws a ring while
// it has the focus.
type button struct {
	widget.Button
	u       *UI
	focused bool
}

// newButton makes a keyboard-ready button; icon may be nil.
func (u *UI) newButton(label string, icon fyne.Resource, tapped func()) *button {
	b := &button{u: u}
	b.Text, b.Icon, b.OnTapped = label, icon, tapped
	b.ExtendBaseWidget(b)
	return b
}

// TypedKey presses the button on Enter and passes Escape to the dialog.
func (b *button) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		b.Tapped(nil)
	case fyne.KeyEscape:
		b.u.escape()
	default:
		b.Button.TypedKey(ev)
	}
}

// FocusGained shows the ring.
func (b *button) FocusGained() {
	b.focused = true
	b.Button.FocusGained()
}

// FocusLost hides the ring.
func (b *button) FocusLost() {
	b.focused = false
	b.Button.FocusLost()
}

// CreateRenderer draws the button with its focus ring on top.
func (b *button) CreateRenderer() fyne.WidgetRenderer {
	ring := canvas.NewRectangle(color.Transparent)
	ring.StrokeWidth = 2
	ring.CornerRadius = theme.InputRadiusSize()
	r := &ringRenderer{WidgetRenderer: b.Button.CreateRenderer(), ring: ring, focused: func() bool { return b.focused },
		color: func() color.Color {
			// The accent colour on a plain button; on a coloured one
			// (the default action) the text colour, which stands out there.
			if b.Importance == widget.MediumImportance || b.Importance == widget.LowImportance {
				return theme.Color(theme.ColorNamePrimary)
			}
			return theme.Color(theme.ColorNameForeground)
		}}
	r.Refresh()
	return r
}

// ringRenderer adds a focus ring to a widget's own renderer.
type ringRenderer struct {
	fyne.WidgetRenderer
	ring    *canvas.Rectangle
	focused func() bool
	color   func() color.Color
}

func (r *ringRenderer) Layout(size fyne.Size) {
	r.WidgetRenderer.Layout(size)
	r.ring.Move(fyne.NewPos(0, 0))
	r.ring.Resize(size)
}

func (r *ringRenderer) Objects() []fyne.CanvasObject {
	objs := r.WidgetRenderer.Objects()
	return append(objs[:len(objs):len(objs)], r.ring)
}

func (r *ringRenderer) Refresh() {
	r.WidgetRenderer.Refresh()
	r.ring.StrokeColor = color.Transparent
	if r.focused() {
		r.ring.StrokeColor = r.color()
	}
	r.ring.Refresh()
}

// entry is a widget.Entry whose Escape goes to the topmost dialog (Enter
// runs OnSubmitted, as Fyne's single-line entries do).
type entry struct {
	widget.Entry
	u *UI
}

func (u *UI) newEntry() *entry {
	e := &entry{u: u}
	e.ExtendBaseWidget(e)
	return e
}

// TypedKey passes Escape to the dialog.
func (e *entry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape {
		e.u.escape()
		return
	}
	e.Entry.TypedKey(ev)
}

// check is a widget.Check whose Escape goes to the topmost dialog.
type check struct {
	widget.Check
	u *UI
}

func (u *UI) newCheck(label string, changed func(bool)) *check {
	c := &check{u: u}
	c.Text, c.OnChanged = label, changed
	c.ExtendBaseWidget(c)
	return c
}

// TypedKey passes Escape and Enter to the dialog (Space checks).
func (c *check) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		c.u.escape()
	case fyne.KeyReturn, fyne.KeyEnter:
		c.u.enter()
	default:
		c.Check.TypedKey(ev)
	}
}

// choice is a widget.Select whose Escape and Enter go to the topmost dialog
// (Space and the arrows open its list, whose own Escape closes the list).
type choice struct {
	widget.Select
	u *UI
}

func (u *UI) newChoice(options []string) *choice {
	c := &choice{u: u}
	c.Options = options
	c.ExtendBaseWidget(c)
	return c
}

// TypedKey passes Escape and Enter to the dialog.
func (c *choice) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		c.u.escape()
	case fyne.KeyReturn, fyne.KeyEnter:
		c.u.enter()
	default:
		c.Select.TypedKey(ev)
	}
}
