package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestAnywhereSettingsForm: off by default with the relay entry disabled;
// a relay address that is not host:port keeps the saved one; on without a
// relay stays off.
func TestAnywhereSettingsForm(t *testing.T) {
	test.NewTempApp(t)
	v := newAnywhereSettings(&UI{})
	v.load(Settings{})
	if v.on.Checked || !v.relay.Disabled() {
		t.Fatal("off by default, relay entry enabled")
	}
	test.Tap(v.on)
	if v.relay.Disabled() {
		t.Fatal("checked, the relay entry is still disabled")
	}
	s := Settings{AnywhereRelay: "relay.example.org:3478"}
	v.relay.SetText("no port here")
	v.apply(&s)
	if !s.Anywhere || s.AnywhereRelay != "relay.example.org:3478" {
		t.Errorf("a bad relay address: %+v", s)
	}
	s = Settings{}
	v.apply(&s)
	if s.Anywhere {
		t.Errorf("on with no relay: %+v", s)
	}
	v.relay.SetText(" 203.0.113.5:3478 ")
	v.apply(&s)
	if !s.Anywhere || s.AnywhereRelay != "203.0.113.5:3478" || s.AnywhereSecret != "" {
		t.Errorf("a good relay: %+v", s)
	}
}

// TestAnywhereSettingsSecret: the relay secret beside the relay: hidden,
// off with the setting, trimmed; one too short keeps the saved one.
func TestAnywhereSettingsSecret(t *testing.T) {
	test.NewTempApp(t)
	v := newAnywhereSettings(&UI{})
	v.load(Settings{AnywhereRelay: "relay.example.org:3478", AnywhereSecret: "the saved secret, long enough"})
	if !v.secret.Password || !v.secret.Disabled() || v.secret.Text != "the saved secret, long enough" {
		t.Fatalf("secret entry: password %v disabled %v text %q", v.secret.Password, v.secret.Disabled(), v.secret.Text)
	}
	test.Tap(v.on)
	if v.secret.Disabled() {
		t.Fatal("checked, the secret entry is still disabled")
	}
	s := Settings{AnywhereSecret: "the saved secret, long enough"}
	v.secret.SetText("short")
	v.apply(&s)
	if s.AnywhereSecret != "the saved secret, long enough" || v.secret.Validate() == nil {
		t.Errorf("a short secret: %+v", s)
	}
	v.secret.SetText("  a new secret for the relay \n")
	v.apply(&s)
	if s.AnywhereSecret != "a new secret for the relay" {
		t.Errorf("a good secret: %q", s.AnywhereSecret)
	}
	v.secret.SetText("")
	v.apply(&s)
	if s.AnywhereSecret != "" {
		t.Errorf("a relay without a secret: %q", s.AnywhereSecret)
	}
}

// anywhereStatusFake is the fake backend that says whether paired devices
// reach this one through the relay.
type anywhereStatusFake struct {
	*fakeBackend
	relay, problem string
}

func (f *anywhereStatusFake) AnywhereStatus() (string, string) { return f.relay, f.problem }

// TestAnywhereStatusSaid: while the relay the settings name cannot be
// used, Settings says why under the relay's fields and the status line
// says the device is not reachable beyond the LAN; once it can, Settings
// says so (that no device is paired to reach it yet, while none is: it
// said they reach it, of no device) and the status line says nothing of
// it. It was said nowhere: a
// relay that did not answer as Ferry started, or stopped answering later,
// was in the log alone.
func TestAnywhereStatusSaid(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	be := &anywhereStatusFake{fakeBackend: newFake()}
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{})
	v := u.settings.anywhere
	u.SelfChanged()
	if v.state.Visible() || strings.Contains(u.status.full, "beyond the LAN") {
		t.Fatalf("the setting off: Settings %q (shown %v), status line %q", v.state.Text, v.state.Visible(), u.status.full)
	}
	be.relay, be.problem = "relay.example.org:3478", "The relay relay.example.org:3478 does not answer: is `ferry-cli relay` running there, and is the address right? The setting is kept, and Ferry tries again by itself."
	u.SelfChanged()
	if !v.state.Visible() || !strings.HasPrefix(v.state.Text, "Your paired devices cannot reach this one beyond the LAN now. The relay relay.example.org:3478 does not answer") ||
		v.state.Importance != widget.DangerImportance {
		t.Errorf("the relay down: Settings %q (shown %v, importance %v)", v.state.Text, v.state.Visible(), v.state.Importance)
	}
	if !strings.HasSuffix(u.status.full, " · not reachable beyond the LAN") {
		t.Errorf("the relay down: status line %q", u.status.full)
	}
	be.problem = ""
	u.SelfChanged()
	// No Ferry device paired (a LocalSend one is never reached there).
	be.known = []KnownDevice{{ID: idAlice, Name: "Phone", LocalSend: true, Paired: true}}
	u.known.reload()
	if !strings.HasPrefix(v.state.Text, "No device is paired with this one yet, so none reaches it beyond the LAN.") ||
		!strings.HasSuffix(v.state.Text, "through the relay relay.example.org:3478.") || v.state.Importance == widget.DangerImportance {
		t.Errorf("the relay back, no device paired: Settings %q", v.state.Text)
	}
	// A pairing made: the Devices page is listed again.
	be.known = append(be.known, KnownDevice{ID: "CAROL" + idAlice[5:], Name: "Laptop", Paired: true})
	u.known.reload()
	if v.state.Text != "Your paired devices reach this one through the relay relay.example.org:3478." || v.state.Importance == widget.DangerImportance {
		t.Errorf("the relay back: Settings %q", v.state.Text)
	}
	if strings.Contains(u.status.full, "beyond the LAN") {
		t.Errorf("the relay back: status line %q", u.status.full)
	}
}
