package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
)

// TestSameNamesShowTheirShortIDs: two Ferrys of one host (two accounts, or
// --config) are both named after it, and the list showed "vm" twice in
// bold, the IDs only in the small print. A name that two rows show carries
// the short ID beside it ("vm · AAAA-BBBB"), where a long name's ellipsis
// cannot hide it; a name shown once stays as it is, its ID in the caption.
func TestSameNamesShowTheirShortIDs(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(fyne.NewSize(900, 600))
	vm := func(id string, online bool) Device {
		return Device{ID: id, Name: "vm", OS: "linux", Addrs: reach("10.0.0.5:4000", addr.QUIC), Online: online, Known: true}
	}
	idCarol := "CAROL" + idAlice[5:]
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: vm(idAlice, true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	if d := u.Describe(); d.Devices[1].Title != "vm" || !strings.Contains(d.Devices[1].Sub, "AAAA-BBBB") {
		t.Fatalf("one vm: %+v", d.Devices[1])
	}
	// The second vm is offline (remembered): its name is in the list all the same.
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: vm(idCarol, false)})
	d := u.Describe()
	want := []string{"Bob's phone", "vm · AAAA-BBBB", "vm · CARO-LBBB"}
	for i, w := range want {
		if d.Devices[i].Title != w {
			t.Fatalf("titles %q, %q, %q; want %q", d.Devices[0].Title, d.Devices[1].Title, d.Devices[2].Title, want)
		}
	}
	if strings.Contains(d.Devices[1].Sub, "AAAA-BBBB") || !strings.Contains(d.Devices[0].Sub, "BOBB-BBBB") {
		t.Errorf("captions %q, %q: the ID goes beside a shared name, not twice", d.Devices[0].Sub, d.Devices[1].Sub)
	}
	if r := u.devices.rows[1]; idTag(r) == nil {
		t.Fatalf("row %q has no ID beside its name", rowText(r))
	}

	// A long shared name is shortened, never the ID beside it, which
	// follows the name's text.
	long := vm(idAlice, true)
	long.Name = strings.Repeat("a very long host name ", 6)
	other := vm(idCarol, true)
	other.Name = long.Name
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: long})
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: other})
	u.win.Canvas().Content().Refresh()
	for _, r := range u.devices.rows {
		if r.dev.Name != long.Name {
			continue
		}
		tag := idTag(r)
		if tag == nil {
			t.Fatalf("%s: no ID beside the long name", r.dev.ID)
		}
		drv := fyne.CurrentApp().Driver()
		room := drv.AbsolutePositionForObject(r.send).X - drv.AbsolutePositionForObject(tag).X
		if tag.Size().Width < tag.MinSize().Width || room < tag.Size().Width {
			t.Errorf("%s: the ID is %v wide (needs %v), with %v before Send…", r.dev.ID, tag.Size().Width, tag.MinSize().Width, room)
		}
	}
	// Short names: the ID right after the name, not at the row's end.
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: vm(idAlice, true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: vm(idCarol, true)})
	u.win.Canvas().Content().Refresh()
	for _, r := range u.devices.rows {
		if r.dev.Name != "vm" {
			continue
		}
		if tag := idTag(r); tag == nil || tag.Position().X > 60 {
			t.Errorf("%s: the ID is not right after 'vm'", r.dev.ID)
		}
	}
}

// idTag is the label beside a device's name that shows its short ID, or nil.
func idTag(r *deviceRow) *widget.Label {
	var found *widget.Label
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *widget.Label:
			if strings.HasPrefix(x.Text, "· ") {
				found = x
			}
		}
	}
	walk(r.obj)
	return found
}
