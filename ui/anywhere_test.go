package ui

import (
	"testing"

	"fyne.io/fyne/v2/test"
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
