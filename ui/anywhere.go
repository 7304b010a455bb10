package ui

import (
	"errors"
	"net"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// anywhereSettings is the "beyond the LAN" part of the Settings form
// (issue #29): off by default, with the relay it goes through.
type anywhereSettings struct {
	on     *check
	relay  *entry
	secret *entry // the relay's secret: hidden, "" for a relay without one
	note   *widget.Label
	state  *widget.Label // whether paired devices reach this one there now, from AnywhereStatus
}

// AnywhereStatus is implemented by a Backend that can say whether paired
// devices reach this one beyond the LAN now: the relay the settings name
// while receiving ("" when off) and why it cannot be used now, in a
// sentence ("" when it can).
type AnywhereStatus interface {
	AnywhereStatus() (relay, problem string)
}

// anywhereState reads be's AnywhereStatus ("", "" when it has none).
func anywhereState(be Backend) (relay, problem string) {
	if st, ok := be.(AnywhereStatus); ok {
		return st.AnywhereStatus()
	}
	return "", ""
}

// minRelaySecret is the engine's shortest relay secret (anywhere.MinSecretLen),
// said here at once; the engine checks it again.
const minRelaySecret = 16

// newAnywhereSettings makes the fields Ferry's: Tab to one scrolls it into
// view (reveal).
func newAnywhereSettings(u *UI) *anywhereSettings {
	v := &anywhereSettings{}
	v.on = u.newCheck("Reach my paired devices from anywhere", func(on bool) {
		if on {
			v.relay.Enable()
			v.secret.Enable()
		} else {
			v.relay.Disable()
			v.secret.Disable()
		}
	})
	v.relay = u.newEntry()
	v.relay.SetPlaceHolder("relay.example.org:3478")
	v.relay.Validator = func(s string) error {
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return errors.New("host:port of a Ferry relay (ferry-cli relay)")
		}
		return nil
	}
	// As widget.NewPasswordEntry: hidden, and (Password with no
	// ActionItem) Fyne's own button to show it.
	v.secret = u.newEntry()
	v.secret.Password = true
	v.secret.Wrapping = fyne.TextWrap(fyne.TextTruncateClip)
	v.secret.SetPlaceHolder("the relay's secret, if it has one")
	v.secret.Validator = func(s string) error {
		if s = strings.TrimSpace(s); s != "" && (len(s) < minRelaySecret || strings.ContainsAny(s, "\r\n")) {
			return errors.New("the secret the relay was started with (ferry-cli relay --secret-file): one line of 16 characters or more")
		}
		return nil
	}
	v.note = widget.NewLabel("Your relay keeps, for your paired devices only, a sealed note that this device receives there, under names only they can compute; it sees this device's internet address.")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.SizeName = theme.SizeNameCaptionText
	v.state = widget.NewLabel("")
	v.state.Wrapping = fyne.TextWrapWord
	v.state.SizeName = theme.SizeNameCaptionText
	v.state.Hide()
	return v
}

// showStatus says whether paired devices reach this one through the relay
// now, and why not.
func (v *anywhereSettings) showStatus(be Backend) {
	relay, problem := anywhereState(be)
	switch {
	case relay == "":
		v.state.Hide()
		return
	case problem != "":
		v.state.SetText("Your paired devices cannot reach this one beyond the LAN now. " + problem)
		v.state.Importance = widget.DangerImportance
	case !anyPaired(be):
		// Serving through the relay is for paired devices alone: with
		// none, nothing reaches this one there, and the relay is not
		// asked anything after its first answer (it said "Your paired
		// devices reach this one through the relay", of no device).
		v.state.SetText("No device is paired with this one yet, so none reaches it beyond the LAN. Pair with a device while it is on this network (Pair… on it); from then on it reaches this one through the relay " + relay + ".")
		v.state.Importance = widget.MediumImportance
	default:
		v.state.SetText("Your paired devices reach this one through the relay " + relay + ".")
		v.state.Importance = widget.MediumImportance
	}
	v.state.Refresh()
	v.state.Show()
}

// anyPaired reports whether be knows a paired Ferry device (a LocalSend
// device is never reached through the relay).
func anyPaired(be Backend) bool {
	for _, d := range be.KnownDevices() {
		if d.Paired && !d.LocalSend {
			return true
		}
	}
	return false
}

func (v *anywhereSettings) items() []*widget.FormItem {
	return []*widget.FormItem{
		widget.NewFormItem("Beyond the LAN", v.on),
		widget.NewFormItem("Relay", v.relay),
		widget.NewFormItem("Relay secret", v.secret),
		widget.NewFormItem("", container.NewVBox(v.note, v.state)),
	}
}

func (v *anywhereSettings) load(s Settings) {
	v.on.SetChecked(s.Anywhere)
	v.on.OnChanged(s.Anywhere)
	v.relay.SetText(s.AnywhereRelay)
	v.secret.SetText(s.AnywhereSecret)
}

// apply takes the form into s; a relay address that cannot be used keeps
// the saved one (the entry shows why).
func (v *anywhereSettings) apply(s *Settings) {
	s.Anywhere = v.on.Checked
	if v.relay.Validate() == nil {
		s.AnywhereRelay = strings.TrimSpace(v.relay.Text)
	}
	if v.secret.Validate() == nil {
		s.AnywhereSecret = strings.TrimSpace(v.secret.Text)
	}
	if s.AnywhereRelay == "" {
		s.Anywhere = false
	}
}
