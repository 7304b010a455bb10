package ui

import (
	"cmp"
	"image/color"
	"slices"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
)

// deviceList renders the devices that discovery reports. It keeps only what
// it draws: the latest Device per key.
type deviceList struct {
	u       *UI
	devices map[string]Device
	checked map[string]bool // device key -> checked, to send to several at once
	lit     string          // the key of the row that just got a drop
	litEnd  time.Time       // when lit goes out (unflash, at Run's tick)
	rows    []*deviceRow    // in display order, for hit-testing drops
	names   sameNames       // the listed devices by shown name, counted by render
	box     *fyne.Container
	empty   fyne.CanvasObject
	scroll  *container.Scroll
}

// deviceRow is one drawn device; obj is what a drop is hit-tested against.
type deviceRow struct {
	dev  Device
	obj  fyne.CanvasObject
	send *button
	pick *check        // checks it for a send to several devices
	info *widget.Label // OS, ID, trust, transports (Describe reads it)
	tag  *widget.Label // the short ID beside a name another row shows too; nil else
	bg   *rowBackground
}

func newDeviceList(u *UI) *deviceList {
	l := &deviceList{u: u, devices: make(map[string]Device), checked: map[string]bool{}}
	hint := widget.NewLabel("Looking for devices on your network…\n\nOpen Ferry on the other device, or add it by address.")
	hint.Wrapping = fyne.TextWrapWord
	hint.Alignment = fyne.TextAlignCenter
	hint.TextStyle.Italic = true // a hint, readable (the "low" colour is the disabled one)
	l.empty = hint
	l.box = container.NewVBox()
	l.scroll = container.NewVScroll(l.box)
	l.render()
	return l
}

// apply merges one discovery event into the list and redraws it.
func (l *deviceList) apply(ev DeviceEvent) {
	key := ev.Device.Key()
	if key == "" {
		return
	}
	switch ev.Kind {
	case DeviceGone:
		d, ok := l.devices[key]
		if !ok {
			return
		}
		if !d.Trusted && !d.Known && d.Source != "remembered" && !ev.Device.Trusted && !ev.Device.Known {
			delete(l.devices, key) // a stranger that left: nothing to remember
			break
		}
		d.Online = false
		if !ev.Device.LastSeen.IsZero() {
			d.LastSeen = ev.Device.LastSeen
		}
		l.devices[key] = d
	default:
		d := ev.Device
		// A device added by address first has no ID; once its ID is known,
		// drop the address-keyed entry so it is not listed twice.
		if d.ID != "" {
			for k, old := range l.devices {
				if old.ID == "" && addr.Shared(old.Addrs, d.Addrs) {
					delete(l.devices, k)
				}
			}
		}
		l.devices[key] = d
	}
	l.render()
	if l.u.known != nil {
		l.u.known.devicesChanged()
	}
}

// ordered returns the devices as shown: online first, then by name.
func (l *deviceList) ordered() []Device {
	out := make([]Device, 0, len(l.devices))
	for _, d := range l.devices {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Online != out[j].Online {
			return out[i].Online
		}
		ni, nj := strings.ToLower(out[i].Name), strings.ToLower(out[j].Name)
		if ni != nj {
			return ni < nj
		}
		return out[i].Key() < out[j].Key()
	})
	return out
}

// selected returns the checked devices that can be sent to right now.
func (l *deviceList) selected() []Device {
	var out []Device
	for _, d := range l.online() {
		if l.checked[d.Key()] {
			out = append(out, d)
		}
	}
	return out
}

func (l *deviceList) isSelected(d Device) bool { return l.checked[d.Key()] }

// flashFor is how long a row stays lit after a drop on it.
const flashFor = 1500 * time.Millisecond

// flash lights row r for a moment: files were dropped on it. Fyne reports
// no drag-over (GLFW 3.3 has no drag-enter event), so this is the nearest
// the list can come to lighting the row under the files. Run's tick puts
// it out (unflash): a timer of its own outlived the window (a test's
// window, whose app was gone when it drew: a nil theme's panic in a later
// test).
func (l *deviceList) flash(r *deviceRow) {
	l.lit, l.litEnd = r.dev.Key(), l.u.now().Add(flashFor)
	l.render()
}

// unflash puts out the row flash lit once its moment is over.
func (l *deviceList) unflash(now time.Time) {
	if l.lit != "" && !now.Before(l.litEnd) {
		l.lit = ""
		l.render()
	}
}

// online returns the devices that can be sent to right now.
func (l *deviceList) online() []Device {
	var out []Device
	for _, d := range l.ordered() {
		if d.Online {
			out = append(out, d)
		}
	}
	return out
}

func (l *deviceList) render() {
	l.rows = l.rows[:0]
	l.box.Objects = nil
	devs := l.ordered()
	if len(devs) == 0 {
		l.box.Objects = []fyne.CanvasObject{l.empty}
	}
	now := l.u.now()
	names := sameNames{}
	for _, d := range devs {
		names[EscapeName(displayName(d))]++
	}
	changed := !names.sameShared(l.names)
	l.names = names
	for _, d := range devs {
		r := l.newRow(d, now, names.shared(EscapeName(displayName(d))))
		l.rows = append(l.rows, r)
		l.box.Objects = append(l.box.Objects, r.obj)
	}
	// The smallest window shows at least one whole device row, never a
	// sliver of one (issue 26, finding 11): the list asks for a row's
	// height (and the box's spacing) as its own minimum.
	minH := float32(0)
	if len(l.rows) > 0 {
		minH = l.rows[0].obj.MinSize().Height + theme.Padding()
	}
	l.scroll.SetMinSize(fyne.NewSize(0, minH))
	l.box.Refresh()
	if changed {
		l.u.sameNamesChanged()
	}
}

// sameNames counts the listed devices by the name their rows show
// (escaped). A name that more than one of them has is shown with the
// device's short ID beside it wherever Ferry names the device: its row, the
// rows and notifications of its transfers, History (named). The list
// counts when it changes, so naming a device costs a map lookup.
type sameNames map[string]int

// shared reports whether more than one listed device shows the name shown.
func (n sameNames) shared(shown string) bool { return n[shown] > 1 }

// named is the name a device gave (raw) as Ferry shows it: escaped, with
// its short ID beside it when more than one listed device has that name
// ("vm · 3NXD-BSTL"); "" when it gave none.
func (n sameNames) named(name, short string) string {
	shown := EscapeName(name)
	if shown != "" && short != "" && n.shared(shown) {
		return shown + " " + tagText(short)
	}
	return shown
}

// sameShared reports whether n and o share the same names.
func (n sameNames) sameShared(o sameNames) bool {
	count := 0
	for k, c := range n {
		if c > 1 {
			if !o.shared(k) {
				return false
			}
			count++
		}
	}
	for _, c := range o {
		if c > 1 {
			count--
		}
	}
	return count == 0
}

// tagText is what follows a shared name: the device's short ID.
func tagText(short string) string { return "· " + short }

// shortTag is the short ID shown for a device: its Ferry ID's, or, for a
// LocalSend device without one, its certificate fingerprint's (fingerprint,
// or the key of an ID "localsend:FINGERPRINT", as History keeps it).
func shortTag(id, fingerprint string) string {
	if fp, ok := strings.CutPrefix(id, "localsend:"); ok && fingerprint == "" {
		fingerprint = fp
	}
	switch {
	case validID(id):
		return ShortID(id)
	case fingerprint != "":
		return shortFingerprint(fingerprint)
	case id != "":
		return ShortID(id)
	}
	return ""
}

// sameNamesChanged names devices again where they are shown once a name
// became shared by two listed devices, or stopped being: the rows of
// transfers (and the model's words about them), History, the unfinished
// transfers and the tray menu.
// Rare, so it may go through every row.
func (u *UI) sameNamesChanged() {
	if u.transfers == nil || u.history == nil {
		return // New is still building the window
	}
	for _, v := range u.transfers.byID {
		u.transfers.setPeer(v)
		u.transfers.refresh(v)
	}
	u.history.filter() // the search matches the short IDs shown
	if u.partials != nil {
		u.partials.named()
	}
	u.updateTray()
}

// names is how the device list counts device names (nil before it exists).
func (u *UI) names() sameNames {
	if u.devices == nil {
		return nil
	}
	return u.devices.names
}

// deviceWho names listed device d as its row does: its name, with its
// short ID beside it when another listed device has that name too.
func (u *UI) deviceWho(d Device) string {
	var fp string
	if d.LocalSend != nil {
		fp = d.LocalSend.Fingerprint
	}
	return u.names().named(displayName(d), shortTag(d.ID, fp))
}

// who names peer p in a title or a notification: its name, with its short
// ID beside it when another listed device has that name too; its short ID
// when it gave no name.
func (u *UI) who(p Peer) string {
	return cmp.Or(u.named(p), ShortID(p.ID))
}

// named is the name peer p gave as Ferry shows it, with its short ID
// beside it when another listed device has that name too; "" when it gave
// none.
func (u *UI) named(p Peer) string {
	return u.names().named(p.Name, shortTag(p.ID, p.Fingerprint))
}

// sentenceWho names peer p inside a sentence ("Pair with vm · 3NXD-BSTL"):
// as who does, and as peerWho when it gave no name.
func (u *UI) sentenceWho(p Peer) string {
	return cmp.Or(u.named(p), peerWho(p))
}

// phoneIcon is a plain phone outline (Fyne's theme has none); themed, so
// it follows the foreground colour in light and dark.
var phoneIcon = theme.NewThemedResource(fyne.NewStaticResource("phone.svg", []byte(
	`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M16 1H8C6.34 1 5 2.34 5 4v16c0 1.66 1.34 3 3 3h8c1.66 0 3-1.34 3-3V4c0-1.66-1.34-3-3-3zm1 17H7V4h10v14zm-3 3h-4v-1h4v1z"/></svg>`)))

func osIcon(goos string) fyne.Resource {
	switch goos {
	case "android", "ios":
		return phoneIcon
	case "":
		return theme.QuestionIcon()
	}
	return theme.ComputerIcon()
}

// newRow draws device d. same says another row shows the same name (two
// Ferrys of one host, each named after it): the name then carries the
// short ID ("vm · PT27-TYCL"), which the caption leaves out.
func (l *deviceList) newRow(d Device, now time.Time, same bool) *deviceRow {
	r := &deviceRow{dev: d}
	icon := osIcon(d.OS)
	if d.OS == "" && d.LocalSend != nil {
		icon = localSendIcon(d.LocalSend.Type)
	}
	if !d.Online {
		icon = theme.NewDisabledResource(icon)
	}
	img := widget.NewIcon(icon)

	var fp string
	if d.LocalSend != nil {
		fp = d.LocalSend.Fingerprint
	}
	id := shortTag(d.ID, fp)
	name := widget.NewLabelWithStyle(EscapeName(displayName(d)), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	name.Truncation = fyne.TextTruncateEllipsis
	var title fyne.CanvasObject = name
	if same && id != "" {
		// Beside the name, where a long name's ellipsis cannot hide it.
		r.tag = widget.NewLabelWithStyle(tagText(id), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		title = container.New(nameTagLayout{}, name, r.tag)
	}
	parts := []string{}
	if os := OSLabel(d.OS); os != "" {
		parts = append(parts, os)
	} else if d.LocalSend != nil && d.LocalSend.Model != "" {
		parts = append(parts, EscapeName(d.LocalSend.Model))
	}
	if id != "" && !same {
		parts = append(parts, id)
	}
	switch {
	case d.Paired:
		parts = append(parts, "paired")
	case d.Trusted:
		parts = append(parts, "trusted")
	case d.Known:
		parts = append(parts, "known")
	case d.Unverified:
		parts = append(parts, "not verified yet")
	default:
		parts = append(parts, "new")
	}
	var tr []string
	for _, k := range addr.Kinds(d.Addrs) {
		if k == lsKind {
			tr = append(tr, "LocalSend")
			continue
		}
		tr = append(tr, k.Label())
	}
	if d.LocalSend != nil && !slices.Contains(addr.Kinds(d.Addrs), lsKind) {
		tr = append(tr, "LocalSend") // the mark, even before its address is known
	}
	if len(tr) > 0 {
		parts = append(parts, strings.Join(tr, "+"))
	}
	if !d.Online {
		// Offline first, so truncation never hides it.
		parts = append([]string{"Offline", LastSeen(d.LastSeen, now)}, parts...)
	}
	info := widget.NewLabel(strings.Join(parts, " · "))
	info.SizeName = theme.SizeNameCaptionText
	info.Truncation = fyne.TextTruncateEllipsis
	r.info = info

	dev := d
	key := d.Key()
	r.send = l.u.newButton("Send…", theme.UploadIcon(), nil)
	r.send.OnTapped = func() { l.showSendMenu(r.send, dev) }
	r.pick = l.u.newCheck("", func(on bool) { l.checked[key] = on })
	r.pick.Checked = l.checked[key]
	if !d.Online {
		r.pick.Disable()
	}
	if !d.Online && len(d.Addrs) == 0 {
		r.send.Disable()
	}
	if !d.Online {
		r.send.Importance = widget.LowImportance
	}

	bg := newRowBackground(d.Online, l.lit == key)
	r.bg = bg
	text := container.New(&tightVBox{}, title, info)
	row := container.NewBorder(nil, nil, container.NewHBox(container.NewCenter(r.pick), container.NewPadded(img)), container.NewCenter(r.send), text)
	r.obj = container.NewStack(bg, container.NewPadded(row))
	return r
}

// showSendMenu offers what to send to dev: files, a folder, a text, the clipboard.
func (l *deviceList) showSendMenu(at fyne.CanvasObject, dev Device) {
	u := l.u
	devs := []Device{dev}
	menu := fyne.NewMenu("",
		fyne.NewMenuItem("Files…", func() { u.pickAndSend(devs) }),
		fyne.NewMenuItem("Folder…", func() { u.pickFolderAndSend(devs) }),
		fyne.NewMenuItem("Text…", func() { u.showSendText(devs, "") }),
		fyne.NewMenuItem("Clipboard", func() { u.sendClipboard(devs) }),
	)
	if canPair(dev) {
		menu.Items = append(menu.Items, fyne.NewMenuItemSeparator(),
			fyne.NewMenuItem("Pair…", func() { u.pairWith(dev) }))
	}
	c := u.win.Canvas()
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(at).AddXY(0, at.Size().Height)
	widget.ShowPopUpMenuAtPosition(menu, c, pos)
}

// canPair reports whether Pair… is offered for d: online, reachable, not
// paired yet, and a Ferry device (LocalSend has no pairing codes).
func canPair(d Device) bool {
	return d.Online && !d.Paired && len(d.Addrs) > 0 && (d.LocalSend == nil || validID(d.ID))
}

func displayName(d Device) string {
	if d.Name != "" {
		return d.Name
	}
	if d.ID != "" {
		return "Device " + ShortID(d.ID)
	}
	return d.Key()
}

// rowAt returns the device row under pos (canvas coordinates), or nil.
func (l *deviceList) rowAt(pos fyne.Position) *deviceRow {
	// The rows' places come from the list's own layout: where its view
	// and box are in the window, and each row's place in the box. Asking
	// the driver for each row's place answered (0, 0) for a row made since
	// the last frame (a window's driver learns an object's canvas only as
	// a frame paints it), and render makes every row anew on each change
	// of any device: a drop between a change and the next frame found no
	// row and opened the send sheet instead of sending.
	drv := fyne.CurrentApp().Driver()
	if !within(pos, drv.AbsolutePositionForObject(l.scroll), l.scroll.Size()) {
		return nil // over the list's header or below it, or scrolled away
	}
	box := drv.AbsolutePositionForObject(l.box)
	for _, r := range l.rows {
		if within(pos, box.Add(r.obj.Position()), r.obj.Size()) {
			return r
		}
	}
	return nil
}

// within reports whether pos lies in the rectangle at p of size s.
func within(pos, p fyne.Position, s fyne.Size) bool {
	return pos.X >= p.X && pos.X < p.X+s.Width && pos.Y >= p.Y && pos.Y < p.Y+s.Height
}

// nameTagLayout lays out a name and its tag on one line: the tag right
// after the name's text, and the name shortened, never the tag, when the
// two do not fit.
type nameTagLayout struct{}

func (l nameTagLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	name, tag := objs[0].MinSize(), objs[1].MinSize()
	return fyne.NewSize(name.Width+tag.Width-l.overlap(nameOf(objs[0])), max(name.Height, tag.Height))
}

// nameOf is the label of a name laid out by nameTagLayout: a label, or
// the send sheet's name that checks its device.
func nameOf(o fyne.CanvasObject) *widget.Label {
	if n, ok := o.(*sheetName); ok {
		return &n.Label
	}
	return o.(*widget.Label)
}

// overlap is how far the tag's label goes over the name's: the two
// labels' inner paddings would leave a wide gap between them, where a
// space is enough.
func (nameTagLayout) overlap(name *widget.Label) float32 {
	return 2*theme.InnerPadding() - fyne.MeasureText(" ", theme.TextSize(), name.TextStyle).Width
}

func (l nameTagLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	name := nameOf(objs[0])
	tag := objs[1]
	over := l.overlap(name)
	// The name's own width: a truncating label's minimum is one letter's.
	// A pixel more: at exactly its width the label cut a short name
	// ("Pixel 8" drew "Pixe…" in the send sheet).
	want := fyne.MeasureText(name.Text, theme.TextSize(), name.TextStyle).Width + 2*theme.InnerPadding() + 1
	tw := tag.MinSize().Width
	w := min(want, size.Width-tw+over)
	objs[0].Move(fyne.NewPos(0, 0))
	objs[0].Resize(fyne.NewSize(w, size.Height))
	tag.Move(fyne.NewPos(w-over, 0))
	tag.Resize(fyne.NewSize(tw, size.Height))
}

// tightVBox stacks objects vertically without padding between them.
type tightVBox struct{}

func (tightVBox) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for _, o := range objs {
		m := o.MinSize()
		s.Width = max(s.Width, m.Width)
		s.Height += m.Height
	}
	return s.SubtractWidthHeight(0, theme.Padding()*float32(max(len(objs)-1, 0)))
}

func (tightVBox) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	y := float32(0)
	for i, o := range objs {
		h := o.MinSize().Height
		if i > 0 {
			y -= theme.Padding()
		}
		o.Move(fyne.NewPos(0, y))
		o.Resize(fyne.NewSize(size.Width, h))
		y += h
	}
}

// rowBackground is a device row's background: filled while the device is
// online, outlined while it is not, edged in the primary colour when files
// land on it. Its colours are read from the theme each time it is drawn:
// the desktop portal turns Fyne light after the window is built, and a
// rectangle coloured once would keep online rows dark, as if disabled
// (issue 26, finding 8).
type rowBackground struct {
	widget.BaseWidget
	online, lit bool
}

func newRowBackground(online, lit bool) *rowBackground {
	b := &rowBackground{online: online, lit: lit}
	b.ExtendBaseWidget(b)
	return b
}

func (b *rowBackground) CreateRenderer() fyne.WidgetRenderer {
	r := &rowBackgroundRenderer{b: b, rect: canvas.NewRectangle(color.Transparent)}
	r.Refresh()
	return r
}

type rowBackgroundRenderer struct {
	b    *rowBackground
	rect *canvas.Rectangle
}

func (r *rowBackgroundRenderer) Layout(size fyne.Size)        { r.rect.Resize(size) }
func (r *rowBackgroundRenderer) MinSize() fyne.Size           { return fyne.Size{} }
func (r *rowBackgroundRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.rect} }
func (r *rowBackgroundRenderer) Destroy()                     {}

func (r *rowBackgroundRenderer) Refresh() {
	th := r.b.Theme()
	v := fyne.CurrentApp().Settings().ThemeVariant()
	fill := th.Color(theme.ColorNameInputBackground, v)
	rect := r.rect
	rect.FillColor, rect.StrokeColor, rect.StrokeWidth = fill, color.Transparent, 0
	if !r.b.online {
		rect.FillColor, rect.StrokeColor, rect.StrokeWidth = color.Transparent, fill, 1
	}
	if r.b.lit {
		rect.StrokeColor, rect.StrokeWidth = th.Color(theme.ColorNamePrimary, v), 2
	}
	rect.CornerRadius = th.Size(theme.SizeNameInputRadius)
	rect.Refresh()
}
