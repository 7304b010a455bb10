package ui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
)

// LocalSend (issue 24): Ferry's second protocol. What the window shows of
// it: the settings, the prompt's lines about a LocalSend sender, and the
// mark of a LocalSend device.

// lsKind is the kind of a LocalSend device's address.
const lsKind = addr.LocalSend

// LocalSendDefaultPort is LocalSend's own port.
const LocalSendDefaultPort = 53317

// localSendLines say who a LocalSend sender is in the prompt: that it uses
// LocalSend, its model and type, its fingerprint, and when nothing proves
// it, that its name and fingerprint are only claims.
func localSendLines(p Peer) []fyne.CanvasObject {
	what := "Uses LocalSend"
	if d := localSendDevice(p.Model, p.DeviceType); d != "" {
		what += " · " + d
	}
	uses := widget.NewLabel(what)
	uses.Truncation = fyne.TextTruncateEllipsis
	fp := widget.NewLabel("Fingerprint " + GroupFingerprint(p.Fingerprint))
	fp.SizeName = theme.SizeNameCaptionText
	fp.Wrapping = fyne.TextWrapBreak
	out := []fyne.CanvasObject{uses, fp}
	if p.Unverified {
		w := widget.NewLabel("This sender presented no certificate, so its name and fingerprint are only what it claims: it cannot be trusted or remembered. Accept only if you expect these files.")
		w.Wrapping = fyne.TextWrapWord
		w.Importance = widget.WarningImportance
		out = append(out, w)
	}
	return out
}

// localSendDevice describes a LocalSend device: "Pixel 8 (phone)".
func localSendDevice(model, kind string) string {
	model = EscapeName(model)
	k := map[string]string{"mobile": "phone", "desktop": "computer", "web": "browser", "headless": "command line", "server": "server"}[strings.ToLower(kind)]
	switch {
	case model != "" && k != "":
		return model + " (" + k + ")"
	case model != "":
		return model
	}
	return k
}

// GroupFingerprint shows a certificate fingerprint (64 hex digits) in
// groups of four, the first 32 digits: enough to compare by eye, the way
// LocalSend's own screens shorten it. Only hex digits are kept (it is the
// peer's word); "unknown" when there are none.
func GroupFingerprint(fp string) string {
	var hex []byte
	for _, r := range strings.ToUpper(fp) {
		if r >= '0' && r <= '9' || r >= 'A' && r <= 'F' {
			hex = append(hex, byte(r))
		}
	}
	if len(hex) == 0 {
		return "unknown"
	}
	more := len(hex) > 32
	hex = hex[:min(len(hex), 32)]
	var b strings.Builder
	for i, c := range hex {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(c)
	}
	if more {
		b.WriteString("…")
	}
	return b.String()
}

// LocalSendStatus is implemented by a Backend that can say how LocalSend
// devices reach this device: the port served (0 while off), this device's
// certificate fingerprint, and a note when the port is not the one asked
// for ("" otherwise).
type LocalSendStatus interface {
	LocalSendStatus() (port int, fingerprint, note string)
}

// localSendSettings is the LocalSend part of the Settings form.
type localSendSettings struct {
	on    *check
	pin   *entry
	port  *entry
	note  *widget.Label
	state *widget.Label // where it serves now, from LocalSendStatus
}

// newLocalSendSettings makes the fields Ferry's: Tab to one scrolls it
// into view (reveal).
func newLocalSendSettings(u *UI) *localSendSettings {
	v := &localSendSettings{}
	v.on = u.newCheck("Let LocalSend devices see and send to this device", func(on bool) {
		if on {
			v.pin.Enable()
			v.port.Enable()
		} else {
			v.pin.Disable()
			v.port.Disable()
		}
	})
	v.pin = u.newEntry()
	v.pin.SetPlaceHolder("None")
	v.pin.Validator = func(s string) error {
		if len(strings.TrimSpace(s)) > 64 {
			return errors.New("at most 64 characters")
		}
		return nil
	}
	v.port = u.newEntry()
	v.port.SetPlaceHolder(strconv.Itoa(LocalSendDefaultPort))
	v.port.Validator = func(s string) error {
		_, err := parsePort(s)
		return err
	}
	v.note = widget.NewLabel("Phones and computers running LocalSend see this device and can send to it, under the same rule of who may send. Devices that find others only by scanning the network look on port 53317.")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.SizeName = theme.SizeNameCaptionText
	v.state = widget.NewLabel("")
	v.state.Wrapping = fyne.TextWrapWord
	v.state.SizeName = theme.SizeNameCaptionText
	v.state.Hide()
	return v
}

// showStatus says where LocalSend devices reach this one now.
func (v *localSendSettings) showStatus(be Backend) {
	st, ok := be.(LocalSendStatus)
	if !ok {
		return
	}
	port, fp, note := st.LocalSendStatus()
	if port == 0 {
		v.state.Hide()
		return
	}
	text := fmt.Sprintf("LocalSend devices reach this one on port %d; its fingerprint starts %s", port, GroupFingerprint(fp))
	if !strings.HasSuffix(text, "…") {
		text += "." // not "7130…."
	}
	if note != "" {
		// The engine's note is a clause ("port 53317 was taken, so ..."):
		// a sentence of its own here.
		text += " " + strings.ToUpper(note[:1]) + strings.TrimSuffix(note[1:], ".") + "."
	}
	v.state.SetText(text)
	v.state.Show()
}

// parsePort reads a port; "" is the default.
func parsePort(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("a port is a number from 1 to 65535")
	}
	return p, nil
}

func (v *localSendSettings) items() []*widget.FormItem {
	return []*widget.FormItem{
		widget.NewFormItem("LocalSend", v.on),
		widget.NewFormItem("LocalSend PIN", v.pin),
		widget.NewFormItem("LocalSend port", v.port),
		widget.NewFormItem("", container.NewVBox(v.note, v.state)),
	}
}

func (v *localSendSettings) load(s Settings) {
	v.on.SetChecked(!s.LocalSendOff)
	v.on.OnChanged(!s.LocalSendOff)
	v.pin.SetText(s.LocalSendPIN)
	v.port.SetText("")
	if s.LocalSendPort != 0 && s.LocalSendPort != LocalSendDefaultPort {
		v.port.SetText(strconv.Itoa(s.LocalSendPort))
	}
}

// apply takes the form into s; a PIN or port that cannot be used keeps the
// saved one (the entry shows why).
func (v *localSendSettings) apply(s *Settings) {
	s.LocalSendOff = !v.on.Checked
	if v.pin.Validate() == nil {
		s.LocalSendPIN = strings.TrimSpace(v.pin.Text)
	}
	if p, err := parsePort(v.port.Text); err == nil {
		s.LocalSendPort = p
	}
}

// localSendIcon is a LocalSend device's type as an icon.
func localSendIcon(kind string) fyne.Resource {
	switch strings.ToLower(kind) {
	case "mobile":
		return phoneIcon
	case "web":
		return theme.GridIcon()
	case "headless", "server":
		return theme.StorageIcon()
	}
	return theme.ComputerIcon()
}

// shortFingerprint names a LocalSend-only device in its row, as ShortID
// does a Ferry one: "5D2B-7A91".
func shortFingerprint(fp string) string {
	g := strings.ReplaceAll(GroupFingerprint(fp), " ", "")
	if len(g) < 8 {
		return g
	}
	return g[:4] + "-" + g[4:8]
}

// ErrNoPIN: the user gave no PIN (cancelled the question).
var ErrNoPIN = errors.New("no PIN given")

// AskPIN asks for the PIN a LocalSend receiver wants before it takes files
// (wrong: the last one given was refused). It blocks until the user
// answers or ctx ends: call it from the sending goroutine, never from the
// Fyne one.
func (u *UI) AskPIN(ctx context.Context, device string, wrong bool) (string, error) {
	answer := make(chan string, 1)
	var hide func()
	u.opt.Do(func() { hide = u.showAskPIN(device, wrong, func(pin string) { answer <- pin }) })
	select {
	case pin := <-answer:
		if pin == "" {
			return "", ErrNoPIN
		}
		return pin, nil
	case <-ctx.Done():
		u.opt.Do(func() {
			if hide != nil {
				hide()
			}
		})
		return "", ctx.Err()
	}
}

// showAskPIN shows the PIN question; done gets the PIN, or "" when the
// user cancels. It returns what takes the question away.
func (u *UI) showAskPIN(device string, wrong bool, done func(string)) func() {
	pin := u.newEntry()
	pin.Password = true
	text := fmt.Sprintf("%s uses LocalSend and asks for a PIN before it takes files. Type the PIN shown or set on it.", EscapeName(device))
	if wrong {
		text = fmt.Sprintf("%s refused that PIN. Type it again (after 3 wrong ones it refuses more for a while).", EscapeName(device))
	}
	msg := widget.NewLabel(text)
	msg.Wrapping = fyne.TextWrapWord
	answered := false
	var d *dialog.CustomDialog
	answer := func(p string) {
		if answered {
			return
		}
		answered = true
		d.Hide()
		done(p)
	}
	ok := u.newButton("Send", theme.ConfirmIcon(), func() { answer(strings.TrimSpace(pin.Text)) })
	ok.Importance = widget.HighImportance
	pin.OnSubmitted = func(string) { ok.OnTapped() } // Enter in the field sends, as in every form
	cancel := u.newButton("Cancel", theme.CancelIcon(), func() { answer("") })
	scroll := container.NewVScroll(container.NewVBox(msg, pin))
	// The wheel over the PIN scrolls the dialog too.
	d = dialog.NewCustomWithoutButtons("PIN for "+EscapeName(device), withPageWheel(scroll), u.win)
	d.SetButtons([]fyne.CanvasObject{cancel, ok})
	fitScroll(d, scroll, 400)
	u.revealWindow()
	m := &modal{dismiss: func() { answer("") }, confirm: ok.OnTapped, scroll: scroll}
	u.showModal(d, m, pin)
	d.SetOnClosed(func() {
		u.dropModal(m)
		if !answered {
			answered = true
			done("")
		}
	})
	return d.Hide
}

// LocalSendScanner is implemented by a Backend that can look for LocalSend
// devices by asking every host of this device's own networks, LocalSend's
// fallback where multicast does not pass. The devices that answer arrive
// as DeviceEvents; ScanLocalSend reports how many did. It is never run
// unless the user asks (the menu's "Look for LocalSend devices…").
type LocalSendScanner interface {
	ScanLocalSend(ctx context.Context) (found int, err error)
}

// lookForLocalSend runs a scan with a dialog that says it is running,
// lets the user stop it, and says what it found.
func (u *UI) lookForLocalSend() {
	sc, ok := u.be.(LocalSendScanner)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	msg := widget.NewLabel("Asking every address of this network whether it runs LocalSend, for up to 30 seconds. " +
		"Devices that answer join the device list.")
	msg.Wrapping = fyne.TextWrapWord
	bar := widget.NewProgressBarInfinite()
	var d *dialog.CustomDialog
	stop := u.newButton("Stop", theme.MediaStopIcon(), func() { cancel(); d.Hide() })
	d = dialog.NewCustomWithoutButtons("Looking for LocalSend devices", container.NewVBox(msg, bar), u.win)
	d.SetButtons([]fyne.CanvasObject{stop})
	d.Resize(fyne.NewSize(440, d.MinSize().Height))
	u.showModal(d, &modal{dismiss: stop.OnTapped, confirm: stop.OnTapped}, stop)
	go func() {
		n, err := sc.ScanLocalSend(ctx)
		u.opt.Do(func() {
			if ctx.Err() != nil {
				return // stopped: the dialog is gone
			}
			cancel()
			bar.Stop()
			bar.Hide()
			msg.SetText(scanResult(n, err))
			stop.SetText("Close")
			stop.SetIcon(nil)
		})
	}()
}

// scanResult says what a LocalSend scan found.
func scanResult(n int, err error) string {
	switch {
	case err != nil:
		return "Could not look for LocalSend devices: " + err.Error()
	case n == 0:
		return "No LocalSend device answered on this network. Check that LocalSend is open on the other device " +
			"and that both devices are on the same network."
	case n == 1:
		return "1 LocalSend device answered; it is in the device list."
	}
	return fmt.Sprintf("%d LocalSend devices answered; they are in the device list.", n)
}
