package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestSameNamesShowTheirShortIDsInTransfers: with two devices named "vm"
// known, a transfer's row said "To vm", its notification "to vm." and
// History "Sent 2 files to vm": which vm? They carry the short ID the
// device list shows beside the name ("vm · AAAA-BBBB"), one rule for all,
// and a unique name does not; once the names differ, the ID goes again.
func TestSameNamesShowTheirShortIDsInTransfers(t *testing.T) {
	u, be, _ := newTestUI(t)
	var notes []string
	u.opt.Notify = func(title, body string) { notes = append(notes, title+": "+body) }
	idCarol := "CAROL" + idAlice[5:]
	vm := func(id string) Device {
		return Device{ID: id, Name: "vm", OS: "linux", Addrs: reach("10.0.0.5:4000", addr.QUIC), Online: true, Known: true}
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: vm(idAlice)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: vm(idCarol)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	send := func(id string, p Peer, state State) {
		u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: id, Direction: Outgoing, State: StateWaiting, Peer: p,
			Offer: &Offer{Files: []FileInfo{{Path: "a.jpg", Size: 1000}, {Path: "b.jpg", Size: 1000}}, Total: 2000}})
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive})
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, Peer: p,
			Result: &Result{State: state, ByPeer: state == StateDeclined, Files: 2, Verified: 2, Bytes: 2000}})
	}
	send("t1", Peer{ID: idCarol, Name: "vm"}, StateDone)
	send("t2", Peer{ID: idBob, Name: "Bob's phone"}, StateDone)
	send("t3", Peer{ID: idAlice, Name: "vm"}, StateDeclined)

	title := func(id string) string { return u.transfers.byID[id].title.full }
	if got := title("t1"); !strings.HasPrefix(got, "To vm · CARO-LBBB: ") {
		t.Errorf("row title %q: which vm?", got)
	}
	if got := title("t2"); strings.Contains(got, "BOBB-BBBB") || strings.Contains(got, "·") {
		t.Errorf("row title %q: a unique name needs no ID", got)
	}
	want := []string{
		"Files sent: Sent 2 files (2.0 kB) to vm · CARO-LBBB.",
		"Files sent: Sent 2 files (2.0 kB) to Bob's phone.",
		"Files not sent: Declined by vm · AAAA-BBBB.",
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notifications:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	if st := u.transfers.byID["t3"].d.Status(); !strings.Contains(st, "vm · AAAA-BBBB") {
		t.Errorf("row status %q: which vm?", st)
	}
	notes = nil
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "t4", Direction: Incoming, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "vm"},
		Offer: &Offer{Files: []FileInfo{{Path: "c.txt", Size: 6}}, Total: 6, PairCode: "482 913"}})
	if len(notes) != 1 || notes[0] != "Incoming files: vm · AAAA-BBBB wants to send you 1 file (6 B). Verification code 482 913." {
		t.Errorf("offer notification %q", notes)
	}
	if got := title("t4"); !strings.HasPrefix(got, "From vm · AAAA-BBBB: ") {
		t.Errorf("row title %q: which vm?", got)
	}
	// Its prompt's name line, and the code line of one with a code.
	if p := u.prompts.queue[0]; p.scroll == nil || !contains(renderedText(p.scroll.Content), "vm · AAAA-BBBB\n",
		"Check that vm · AAAA-BBBB shows the same code before you trust it.") {
		t.Errorf("the offer prompt does not say which vm:\n%s", renderedText(p.scroll.Content))
	}

	be.history = []HistoryEntry{
		{ID: "t1", Direction: Outgoing, PeerName: "vm", PeerID: idCarol, Files: 2, Bytes: 2000, State: StateDone},
		{ID: "t2", Direction: Outgoing, PeerName: "Bob's phone", PeerID: idBob, Files: 2, Bytes: 2000, State: StateDone},
	}
	u.history.reload()
	if got := historyTitle(be.history[0], u.names(), time.Minute); got != "Sent 2 files to vm · CARO-LBBB" {
		t.Errorf("History: %q", got)
	}
	if got := historyTitle(be.history[1], u.names(), time.Minute); got != "Sent 2 files to Bob's phone" {
		t.Errorf("History: %q", got)
	}
	// A LocalSend device's entry keeps its ID as "localsend:FINGERPRINT":
	// its short ID is the fingerprint's, as its row shows it.
	fp := "9E576A7C59221AFFAB063D05C93EBF623B18E6210BE368F101EB17B06C4A5A82"
	if got := historyWho(HistoryEntry{PeerName: "vm", PeerID: "localsend:" + fp}, u.names()); got != "vm · 9E57-6A7C" {
		t.Errorf("History of a LocalSend vm: %q", got)
	}
	u.history.search.SetText("caro")
	if len(u.history.entries) != 1 {
		t.Errorf("searching History for the short ID finds %d entries", len(u.history.entries))
	}

	// The text dialog says which vm it sends to.
	u.showSendText([]Device{vm(idCarol)}, "")
	if top := u.win.Canvas().Overlays().Top(); !strings.Contains(renderedText(top), "Send text to vm · CARO-LBBB") {
		t.Errorf("the text dialog does not say which vm:\n%s", renderedText(top))
	}
	u.win.Canvas().Overlays().Top().Hide()

	// Pairing says which vm: its error, its dialog, its notification.
	be.pairErr = errors.New("no route to host")
	u.pairWith(vm(idCarol))
	if top := u.win.Canvas().Overlays().Top(); !strings.Contains(renderedText(top), "Could not pair with vm · CARO-LBBB") {
		t.Errorf("the pairing error does not say which vm:\n%s", renderedText(top))
	}
	u.win.Canvas().Overlays().Top().Hide()
	be.pairErr = nil
	u.pairWith(vm(idAlice))
	id := fmt.Sprintf("pair-%d", len(be.paired))
	v := u.pairs[id]
	if v == nil {
		t.Fatal("no pairing dialog")
	}
	if v.status.Text != "Connecting to vm · AAAA-BBBB…" || v.line.Text != "Check that vm · AAAA-BBBB shows the same code." {
		t.Errorf("pairing dialog: %q, %q", v.status.Text, v.line.Text)
	}
	press(u, fyne.KeyEscape) // closed: the end is a notification
	notes = nil
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, State: StateFailed, Peer: Peer{ID: idAlice, Name: "vm"}, Pairing: true,
		Result: &Result{State: StateFailed, Code: CodeNotPaired, ByPeer: true}})
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "Not paired: vm · AAAA-BBBB ") {
		t.Errorf("pairing notification %q", notes)
	}

	// The unfinished transfers say which vm they came from.
	be.partials = []PartialTransfer{
		{Key: "k1", PeerID: idCarol, PeerName: "vm", Files: 1, Bytes: 10, Updated: u.now()},
		{Key: "k2", PeerID: idBob, PeerName: "Bob's phone", Files: 1, Bytes: 10, Updated: u.now()},
	}
	u.partials.reload()
	if got := u.partials.rows[0].text.Text; !strings.HasPrefix(got, "From vm · CARO-LBBB · 1 file") {
		t.Errorf("unfinished transfer %q: which vm?", got)
	}
	if got := u.partials.rows[1].text.Text; !strings.HasPrefix(got, "From Bob's phone · 1 file") {
		t.Errorf("unfinished transfer %q: a unique name needs no ID", got)
	}

	// Renamed, the other vm no longer shares the name: no ID beside it.
	u.deviceRenamed(idAlice, "vm2")
	if got := title("t1"); !strings.HasPrefix(got, "To vm: ") {
		t.Errorf("row title %q once the name is unique", got)
	}
	if got := title("t3"); !strings.HasPrefix(got, "To vm2: ") {
		t.Errorf("row title %q after the rename", got)
	}
	if got := u.partials.rows[0].text.Text; !strings.HasPrefix(got, "From vm · 1 file") {
		t.Errorf("unfinished transfer %q once the name is unique", got)
	}
}

// TestSameNamesShowTheirShortIDsInKeyChange: the vm paired with and another
// device calling itself vm with a new key, both listed. The warning said
// "vm presented a different key" with "Forget vm", the notification's
// action "Forget vm": which one goes? They name the remembered device by
// the list's rule, with its short ID (the one Forget removes), and so does
// the message once it is forgotten; a unique name stays alone.
func TestSameNamesShowTheirShortIDsInKeyChange(t *testing.T) {
	u, be, _ := newTestUI(t)
	idCarol := "CAROL" + idAlice[5:]
	be.known = []KnownDevice{{ID: idAlice, Name: "vm", Paired: true}}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "vm", OS: "linux", Known: true, Trusted: true, Paired: true,
		Addrs: reach("10.0.0.5:4000", addr.QUIC)}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idCarol, Name: "vm", OS: "linux", Online: true,
		Addrs: reach("10.0.0.6:4000", addr.QUIC)}})
	ev := func(name string) TransferEvent {
		return TransferEvent{Kind: TransferKeyChanged, Direction: Incoming, Peer: Peer{ID: idCarol, Name: name},
			KeyChange: &KeyChange{Known: Peer{ID: idAlice, Name: name, Trusted: true}, PresentedID: idCarol, Warning: "A device calling itself \"" + name + "\" …"}}
	}

	// Hidden in the tray: the notification's action says which vm.
	var labels []string
	u.opt.NotifyActions = func(title, body string, actions []NoticeAction) {
		for _, a := range actions {
			labels = append(labels, a.Label)
		}
	}
	u.SetWindowShown(false)
	u.ApplyTransfer(ev("vm"))
	if strings.Join(labels, "|") != "Show|Forget vm · AAAA-BBBB" {
		t.Errorf("notification actions %q: which vm goes?", labels)
	}

	// A name no other listed device shows: no ID beside it.
	labels = nil
	u.ApplyTransfer(ev("Alice"))
	if strings.Join(labels, "|") != "Show|Forget Alice" {
		t.Errorf("notification actions %q: a unique name needs no ID", labels)
	}

	// On screen: the dialog's heading and its Forget, then the message.
	u.SetWindowShown(true)
	u.ApplyTransfer(ev("vm"))
	top := u.win.Canvas().Overlays().Top()
	if !strings.Contains(renderedText(top), "vm · AAAA-BBBB presented a different key\n") {
		t.Errorf("the warning does not say which vm:\n%s", renderedText(top))
	}
	forget := dangerButton(t, u)
	if forget.Text != "Forget vm · AAAA-BBBB" {
		t.Errorf("the warning's button %q: which vm goes?", forget.Text)
	}
	forget.OnTapped()
	if len(be.forgotten) != 1 || be.forgotten[0] != idAlice {
		t.Fatalf("forgotten %v", be.forgotten)
	}
	if top := u.win.Canvas().Overlays().Top(); !strings.Contains(renderedText(top), "Ferry no longer knows vm · AAAA-BBBB.") {
		t.Errorf("the message does not say which vm was forgotten:\n%s", renderedText(top))
	}
	press(u, fyne.KeyEscape)
}
