package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
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
	// scroll is the dialog's scrolling content, if any: Tab to a control
	// out of its view scrolls it there (reveal).
	scroll *container.Scroll
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

// reveal scrolls the control o that just took the focus into view. Fyne
// moves the focus with Tab but never scrolls to it: at a small window Tab
// went on to the offer prompt's Change… and "Always accept" below the fold
// and to Settings' Save, which nothing showed. o is looked for in the
// topmost dialog's scroll, else in the window's scrolling pages that are on
// screen (Fyne's focus stays within the topmost overlay).
func (u *UI) reveal(o fyne.CanvasObject) {
	scrolls := u.pageScrolls
	if n := len(u.modals); n > 0 {
		scrolls = []*container.Scroll{u.modals[n-1].scroll}
	}
	drv := fyne.CurrentApp().Driver()
	op, osz := drv.AbsolutePositionForObject(o), o.Size()
	for _, s := range scrolls {
		if s == nil || !s.Visible() || s.Content == nil {
			continue
		}
		sp, ssz := drv.AbsolutePositionForObject(s), s.Size()
		if sp.IsZero() { // not on screen (another page)
			continue
		}
		if !inside(o, op, s) {
			continue
		}
		pad := theme.Padding()
		y := s.Offset.Y
		switch rel := op.Y - sp.Y; {
		case rel < pad || osz.Height+2*pad > ssz.Height:
			y += rel - pad // above the view, or taller than it: its top at the top
		case rel+osz.Height+pad > ssz.Height:
			y += rel + osz.Height + pad - ssz.Height // below: its bottom at the bottom
		default:
			continue // in view
		}
		s.ScrollToOffset(fyne.NewPos(s.Offset.X, max(0, y)))
	}
}

// inside reports whether o, drawn at op, is inside s's content. Fyne has
// no public way up or down the tree of what widgets draw, and where o is
// says nothing: a dialog's buttons lie where its content would go on
// below the view. So s's content is moved a pixel, and back: o moved with
// it if it is inside.
func inside(o fyne.CanvasObject, op fyne.Position, s *container.Scroll) bool {
	c := s.Content
	at := c.Position()
	c.Move(at.AddXY(0, 1))
	moved := fyne.CurrentApp().Driver().AbsolutePositionForObject(o) != op
	c.Move(at)
	return moved
}

// typedKey is the canvas's key handler: keys nobody focused took.
func (u *UI) typedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		u.escape()
	case fyne.KeyReturn, fyne.KeyEnter:
		u.enter()
	case keyMenu:
		u.openMenu()
	}
}

// keyMenu opens the window's menu, as F10 does in GTK and Windows apps.
// Fyne opens its menu bar from the keyboard only with Alt, and offers no
// call that opens it (its canvas's ToggleMenu is internal): F10 shows the
// same menu as a pop-up at the window's top left instead, which the arrow
// keys, Enter and Escape work (widget.PopUpMenu). Fyne hands a key without
// a modifier to the focused widget, or to the canvas when none is: so the
// canvas and each of Ferry's focusable types pass it on (others, such as
// Fyne's lists, keep it).
const keyMenu = fyne.KeyF10

// openMenu shows the window's menu (keyMenu) as a pop-up with the keyboard
// on its first item; several menus are its items' child menus.
func (u *UI) openMenu() {
	mm := u.win.MainMenu()
	if mm == nil || len(mm.Items) == 0 {
		return
	}
	m := mm.Items[0]
	if len(mm.Items) > 1 {
		m = fyne.NewMenu("")
		for _, child := range mm.Items {
			i := fyne.NewMenuItem(child.Label, nil)
			i.ChildMenu = child
			m.Items = append(m.Items, i)
		}
	}
	c := u.win.Canvas()
	pop := widget.NewPopUpMenu(m, c)
	pop.ShowAtRelativePosition(fyne.NewPos(0, 0), c.Content())
	pop.TypedKey(&fyne.KeyEvent{Name: fyne.KeyDown}) // the first item, as the menu bar's Alt does
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

// TypedKey presses the button on Enter, passes Escape to the dialog and
// opens the menu on F10.
func (b *button) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyReturn, fyne.KeyEnter:
		b.Tapped(nil)
	case fyne.KeyEscape:
		b.u.escape()
	case keyMenu:
		b.u.openMenu()
	default:
		b.Button.TypedKey(ev)
	}
}

// FocusGained shows the ring and the button.
func (b *button) FocusGained() {
	b.focused = true
	b.Button.FocusGained()
	b.u.reveal(b)
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

// FocusGained scrolls the field into view.
func (e *entry) FocusGained() {
	e.Entry.FocusGained()
	e.u.reveal(e)
}

// TypedKey passes Escape to the dialog; F10 opens the menu.
func (e *entry) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		e.u.escape()
		return
	case keyMenu:
		e.u.openMenu()
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

// FocusGained scrolls the check into view.
func (c *check) FocusGained() {
	c.Check.FocusGained()
	c.u.reveal(c)
}

// TypedKey passes Escape and Enter to the dialog (Space checks).
func (c *check) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		c.u.escape()
	case keyMenu:
		c.u.openMenu()
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

// FocusGained scrolls the choice into view.
func (c *choice) FocusGained() {
	c.Select.FocusGained()
	c.u.reveal(c)
}

// TypedKey passes Escape and Enter to the dialog.
func (c *choice) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyEscape:
		c.u.escape()
	case keyMenu:
		c.u.openMenu()
	case fyne.KeyReturn, fyne.KeyEnter:
		c.u.enter()
	default:
		c.Select.TypedKey(ev)
	}
}

// radio is Ferry's choice of one option of several, as a required
// widget.RadioGroup: Fyne's options are its own, unexported, and never
// call reveal, so Tab left "Who may send" below the fold. Its options are
// Ferry's checks, drawn with the radio button's icons (radioTheme).
type radio struct {
	widget.BaseWidget
	// Selected is the option chosen; SetSelected chooses one.
	Selected string
	// OnChanged, if set, is called after the user chose an option
	// (not after SetSelected).
	OnChanged func(string)
	options   []*check
	box       *fyne.Container
}

func (u *UI) newRadio(options []string) *radio {
	r := &radio{}
	r.box = container.New(layout.NewCustomPaddedVBoxLayout(0))
	for _, o := range options {
		c := u.newCheck(o, nil)
		c.OnChanged = func(on bool) {
			if on || r.Selected == o {
				r.SetSelected(o) // an option is always chosen
				if r.OnChanged != nil {
					r.OnChanged(o)
				}
			}
		}
		r.options = append(r.options, c)
		r.box.Add(c)
	}
	r.ExtendBaseWidget(r)
	return r
}

// SetSelected chooses option s.
func (r *radio) SetSelected(s string) {
	r.Selected = s
	for _, c := range r.options {
		if on := c.Text == s; c.Checked != on {
			c.Checked = on // not SetChecked: its OnChanged would come back here
			c.Refresh()
		}
	}
}

// CreateRenderer draws the options as radio buttons.
func (r *radio) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(container.NewThemeOverride(r.box, radioTheme{}))
}

// radioTheme is the app's theme with a check's icons replaced by a radio
// button's.
type radioTheme struct{}

func (radioTheme) current() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (t radioTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return t.current().Color(n, v)
}

func (t radioTheme) Font(s fyne.TextStyle) fyne.Resource { return t.current().Font(s) }

func (t radioTheme) Size(n fyne.ThemeSizeName) float32 { return t.current().Size(n) }

func (t radioTheme) Icon(n fyne.ThemeIconName) fyne.Resource {
	switch n {
	case theme.IconNameCheckButton:
		n = theme.IconNameRadioButton
	case theme.IconNameCheckButtonChecked:
		n = theme.IconNameRadioButtonChecked
	case theme.IconNameCheckButtonFill:
		n = theme.IconNameRadioButtonFill
	}
	return t.current().Icon(n)
}
