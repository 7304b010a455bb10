package ui

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
)

// fakeBackend records what the UI asks for.
type fakeBackend struct {
	mu        sync.Mutex
	sends     []sendCall
	decisions map[string]Decision
	cancels   []string
	settings  Settings
	history   []HistoryEntry
	opened    []string
	sendErr   error
	pauses    []string
	resumes   []string
	retries   []string
	partials  []PartialTransfer
	discarded []string
	openErr   error
	files     []string // OpenFile calls
	shown     []string // ShowInFolder calls
	known     []KnownDevice
	renamed   map[string]string
	added     []string // AddDevice calls, "addr id"
	addrs     []string
	free      int64
	paired    []Device     // Pair calls
	pairErr   error        // what Pair returns (nil: it starts)
	confirms  []pairAnswer // ConfirmPair calls
	onScreen  []string     // OfferOnScreen calls, "id shown" or "id queued"
	forgotten []string     // ForgetDevice calls
	// badDir is a download folder SaveSettings refuses (the rest is saved).
	badDir string
	// saveErr is what SaveSettings returns after saving (nil: nothing to say).
	saveErr error
	// survey answers Survey (nil: a count that ends only when stopped).
	survey func(ctx context.Context, paths []string) (Contents, error)
}

type pairAnswer struct {
	id    string
	match bool
}

func (f *fakeBackend) Pair(d Device) (string, error) {
	f.paired = append(f.paired, d)
	if f.pairErr != nil {
		return "", f.pairErr
	}
	return fmt.Sprintf("pair-%d", len(f.paired)), nil
}

func (f *fakeBackend) OfferOnScreen(id string, shown bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	word := "queued"
	if shown {
		word = "shown"
	}
	f.onScreen = append(f.onScreen, id+" "+word)
	return nil
}

func (f *fakeBackend) ConfirmPair(id string, match bool) error {
	f.confirms = append(f.confirms, pairAnswer{id, match})
	return nil
}

type sendCall struct {
	dev   Device
	paths []string
	text  string
}

func newFake() *fakeBackend {
	return &fakeBackend{decisions: map[string]Decision{}, settings: Settings{DeviceName: "Desk", DownloadDir: "/tmp/in", Policy: PolicyEveryone}}
}

func (f *fakeBackend) Send(d Device, items Items) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends = append(f.sends, sendCall{d, items.Paths, items.Text})
	return f.sendErr
}

func (f *fakeBackend) Decide(id string, d Decision) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.decisions[id]; dup {
		return errors.New("already decided")
	}
	f.decisions[id] = d
	return nil
}

func (f *fakeBackend) Cancel(id string) error {
	f.cancels = append(f.cancels, id)
	return nil
}

func (f *fakeBackend) Pause(id string) error  { f.pauses = append(f.pauses, id); return nil }
func (f *fakeBackend) Resume(id string) error { f.resumes = append(f.resumes, id); return nil }
func (f *fakeBackend) Retry(id string) error  { f.retries = append(f.retries, id); return nil }

func (f *fakeBackend) Partials() []PartialTransfer { return f.partials }

func (f *fakeBackend) DiscardPartial(key string) error {
	f.discarded = append(f.discarded, key)
	kept := f.partials[:0]
	for _, p := range f.partials {
		if p.Key != key {
			kept = append(kept, p)
		}
	}
	f.partials = kept
	return nil
}

func (f *fakeBackend) AddDevice(_ context.Context, hostport, id string) (Device, error) {
	f.mu.Lock()
	f.added = append(f.added, hostport+" "+id)
	f.mu.Unlock()
	return Device{Name: "manual", Addrs: reach(hostport, addr.QUIC), Online: true, Source: "manual", Unverified: true}, nil
}

func (f *fakeBackend) Settings() Settings { return f.settings }
func (f *fakeBackend) SaveSettings(s Settings) error {
	if f.badDir != "" && s.DownloadDir == f.badDir {
		s.DownloadDir = f.settings.DownloadDir
		f.settings = s
		return errors.Join(&Problem{Text: "The folder " + f.badDir + " cannot be used for received files: it is a file.", Err: errors.New("engine's words")},
			errors.New("a technical failure"))
	}
	f.settings = s
	return f.saveErr
}
func (f *fakeBackend) History() []HistoryEntry { return f.history }
func (f *fakeBackend) ClearHistory() error     { f.history = nil; return nil }
func (f *fakeBackend) OpenFile(p string) error { f.files = append(f.files, p); return f.openErr }
func (f *fakeBackend) ShowInFolder(p string) error {
	f.shown = append(f.shown, p)
	return f.openErr
}
func (f *fakeBackend) Thumbnail(string) image.Image { return nil }

// Survey answers with f.survey, else counts until ctx ends, as a tree
// on a stalled disk would: a test that does not look at the count sees
// "Counting…", and nothing changes its sheet from another goroutine.
func (f *fakeBackend) Survey(ctx context.Context, paths []string) (Contents, error) {
	if f.survey != nil {
		return f.survey(ctx, paths)
	}
	<-ctx.Done()
	return Contents{}, ctx.Err()
}
func (f *fakeBackend) FreeSpace(string) int64      { return f.free }
func (f *fakeBackend) SelfAddresses() []string     { return f.addrs }
func (f *fakeBackend) KnownDevices() []KnownDevice { return f.known }
func (f *fakeBackend) SetAutoAccept(id string, on bool) error {
	for i := range f.known {
		if f.known[i].ID == id {
			f.known[i].AutoAccept = on
		}
	}
	return nil
}
func (f *fakeBackend) RenameDevice(id, name string) error {
	for i := range f.known {
		if f.known[i].ID == id {
			f.known[i].Name, f.known[i].Renamed = name, name != ""
			if name == "" {
				f.known[i].Name = f.known[i].Announced
			}
		}
	}
	return nil
}
func (f *fakeBackend) ForgetDevice(id string) error {
	f.forgotten = append(f.forgotten, id)
	kept := f.known[:0]
	for _, d := range f.known {
		if d.ID != id {
			kept = append(kept, d)
		}
	}
	f.known = kept
	return nil
}
func (f *fakeBackend) OpenFolder(p string) error { f.opened = append(f.opened, p); return f.openErr }

const (
	idAlice = "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMQ"
	idBob   = "BOBBBBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMQ"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// newTestUI builds a UI in a headless test window.
func newTestUI(t *testing.T) (*UI, *fakeBackend, *clock) {
	t.Helper()
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	be := newFake()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{Now: c.now})
	return u, be, c
}

func alice(online bool) Device {
	return Device{ID: idAlice, Name: "Alice's laptop", OS: "darwin", Addrs: reach("10.0.0.2:4000", addr.QUIC, addr.TCP), Online: online, Source: "mdns"}
}

func TestDeviceListRendersDiscoveryEvents(t *testing.T) {
	u, _, c := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	if len(u.devices.rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(u.devices.rows))
	}
	if got := rowText(u.devices.rows[0]); !contains(got, "Alice's laptop", "macOS", "AAAA-BBBB", "new", "QUIC+TCP") {
		t.Errorf("row text %q misses name/OS/short ID/trust/transports", got)
	}

	d := alice(true)
	d.Trusted = true
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: d})
	if got := rowText(u.devices.rows[0]); !contains(got, "trusted") {
		t.Errorf("after change row text %q lacks trusted", got)
	}

	// A trusted device that leaves stays listed, greyed, with "last seen".
	d.LastSeen = c.t.Add(-5 * time.Minute)
	u.ApplyDevice(DeviceEvent{Kind: DeviceGone, Device: d})
	if len(u.devices.rows) != 1 || u.devices.rows[0].dev.Online {
		t.Fatalf("trusted device gone: rows %d, online %v", len(u.devices.rows), u.devices.rows[0].dev.Online)
	}
	if got := rowText(u.devices.rows[0]); !contains(got, "Offline · last seen 5 min ago") {
		t.Errorf("offline row text %q lacks last seen", got)
	}

	// A stranger that leaves disappears.
	bob := Device{ID: idBob, Name: "Bob", Online: true}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob})
	if len(u.devices.rows) != 2 || u.devices.rows[0].dev.ID != idBob {
		t.Fatalf("online devices must be listed first; rows = %d", len(u.devices.rows))
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceGone, Device: bob})
	if len(u.devices.rows) != 1 {
		t.Fatalf("untrusted device gone: rows = %d, want 1", len(u.devices.rows))
	}
}

func TestManualDeviceReplacedOnceIDKnown(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{Addrs: reach("10.0.0.2:4000", addr.QUIC), Online: true, Unverified: true}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	if len(u.devices.rows) != 1 {
		t.Fatalf("rows = %d, want 1 (address entry merged into the ID entry)", len(u.devices.rows))
	}
}

func TestDropOnRowSendsToThatDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idBob, Name: "Bob", Online: true, Addrs: reach("10.0.0.3:1", addr.QUIC)}})
	u.win.Resize(fyne.NewSize(900, 600))

	var target *deviceRow
	for _, r := range u.devices.rows {
		if r.dev.Name == "Bob" {
			target = r
		}
	}
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(target.obj).Add(fyne.NewPos(20, target.obj.Size().Height/2))
	u.HandleDrop(pos, []fyne.URI{fileURI("/tmp/a.txt"), fileURI("/tmp/dir")})

	if len(be.sends) != 1 {
		t.Fatalf("sends = %d, want 1", len(be.sends))
	}
	if be.sends[0].dev.ID != idBob || len(be.sends[0].paths) != 2 || be.sends[0].paths[0] != "/tmp/a.txt" {
		t.Errorf("send = %+v, want both paths to Bob", be.sends[0])
	}
}

func TestDropElsewhereAsksWhichDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.HandleDrop(fyne.NewPos(890, 590), []fyne.URI{fileURI("/tmp/a.txt")})
	if len(be.sends) != 0 {
		t.Fatalf("a drop outside the rows sent at once: %+v", be.sends)
	}
	if u.ask == nil {
		t.Fatal("no device question shown")
	}
	test.Tap(u.ask.sendBtn)
	if len(be.sends) != 1 || be.sends[0].dev.ID != idAlice {
		t.Fatalf("sends = %+v, want one to Alice", be.sends)
	}
}

func TestSendFailureIsShownNotLost(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.sendErr = errors.New("device unreachable")
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.send(alice(true), Items{Paths: []string{"/tmp/x"}})
	if len(be.sends) != 1 {
		t.Fatal("send not attempted")
	}
	if n := len(u.win.Canvas().Overlays().List()); n == 0 {
		t.Error("no error dialog shown")
	}
}

func offerEvent(id string, files int) TransferEvent {
	o := &Offer{Dest: "/home/u/Downloads", FreeBytes: 1 << 40}
	for i := 0; i < files; i++ {
		o.Files = append(o.Files, FileInfo{Path: fmt.Sprintf("dir/file %d.txt", i), Size: 1000})
		o.Total += 1000
	}
	return TransferEvent{Kind: TransferOffer, ID: id, Direction: Incoming, State: StateWaiting,
		Peer: Peer{ID: idAlice, Name: "Alice"}, Offer: o}
}

// A text alone comes as "Incoming text", in its notification as in its
// prompt (the notification said "Incoming files" over "… wants to send
// you a text"); files and a text, "Incoming files".
func TestTextOfferIsAnIncomingText(t *testing.T) {
	u, _, _ := newTestUI(t)
	text := offerEvent("t1", 0)
	text.Offer.Text = "hello"
	test.AssertNotificationSent(t, fyne.NewNotification("Incoming text", "Alice wants to send you a text."), func() {
		u.ApplyTransfer(text)
	})
	if got := offerTitle(text.Offer); got != "Incoming text" {
		t.Errorf("prompt %q", got)
	}
	both := offerEvent("t2", 1)
	both.Offer.Text = "hello"
	if got := offerTitle(both.Offer); got != "Incoming files" {
		t.Errorf("files and a text: %q", got)
	}
}

func TestPromptAcceptAndDeclineReachBackend(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(offerEvent("t1", 3))
	p := u.prompts.queue[0]
	test.AssertNotificationSent(t, fyne.NewNotification("Incoming files", "Alice wants to send you 1 file (1.0 kB)."), func() {
		u.ApplyTransfer(offerEvent("t2", 1))
	})
	p.always.SetChecked(true)
	test.Tap(p.accept)
	if d, ok := be.decisions["t1"]; !ok || !d.Accept || !d.AlwaysAccept {
		t.Fatalf("t1 decision = %+v %v, want accept+always", d, ok)
	}
	if len(u.prompts.queue) != 1 || u.prompts.queue[0].ev.ID != "t2" || u.prompts.queue[0].dlg == nil {
		t.Fatal("the queued second offer is not shown after the first was answered")
	}
	test.Tap(u.prompts.queue[0].decline)
	if d, ok := be.decisions["t2"]; !ok || d.Accept {
		t.Fatalf("t2 decision = %+v %v, want decline", d, ok)
	}
	if len(u.prompts.queue) != 0 {
		t.Fatal("queue not empty")
	}
}

func TestPromptExpiresAsDeclined(t *testing.T) {
	u, be, c := newTestUI(t)
	u.ApplyTransfer(offerEvent("t1", 1))
	u.ExpirePrompts(c.t.Add(119 * time.Second))
	if len(be.decisions) != 0 {
		t.Fatal("declined before the timeout")
	}
	u.ExpirePrompts(c.t.Add(2 * time.Minute))
	if d, ok := be.decisions["t1"]; !ok || d.Accept {
		t.Fatalf("decision = %+v %v, want decline on expiry", d, ok)
	}
	if len(u.prompts.queue) != 0 {
		t.Fatal("expired prompt still queued")
	}
}

func TestPromptQueueIsBounded(t *testing.T) {
	u, be, _ := newTestUI(t)
	for i := 0; i < 10; i++ {
		u.ApplyTransfer(offerEvent(fmt.Sprint("t", i), 1))
	}
	if len(u.prompts.queue) != 8 {
		t.Fatalf("queue = %d, want 8", len(u.prompts.queue))
	}
	for _, id := range []string{"t8", "t9"} {
		if d, ok := be.decisions[id]; !ok || d.Accept {
			t.Errorf("%s: decision %+v %v, want declined as overflow", id, d, ok)
		}
	}
	if len(be.decisions) != 2 {
		t.Errorf("decisions = %d, want only the 2 overflowing offers", len(be.decisions))
	}
	// The sender withdrawing a queued offer removes it without an answer.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t3", Direction: Incoming, State: StateCancelled,
		Peer: Peer{Name: "Alice"}, Result: &Result{State: StateCancelled}})
	if len(u.prompts.queue) != 7 {
		t.Errorf("queue = %d after withdrawal, want 7", len(u.prompts.queue))
	}
}

func TestProgressUpdatesRow(t *testing.T) {
	u, be, _ := newTestUI(t)
	id := "x1"
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"}})
	v := u.transfers.byID[id]
	if v.stateLbl.Text != "Waiting for Alice to accept" {
		t.Errorf("state = %q", v.stateLbl.Text)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Outgoing, State: StateActive, Transport: "quic", Reason: "preferred"})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 25_000_000, Total: 100_000_000, Files: 1, TotalFiles: 4, Rate: 50e6, ETA: 2 * time.Second}})
	if v.bar.Value != 0.25 {
		t.Errorf("bar = %v, want 0.25", v.bar.Value)
	}
	if !contains(v.sub.Text, "4 files", "25.0 MB of 100.0 MB", "50.0 MB/s", "2 s left", "QUIC") || v.stateLbl.Text != "Sending 4 files" {
		t.Errorf("sub = %q state = %q", v.sub.Text, v.stateLbl.Text)
	}
	test.Tap(v.cancel)
	if len(be.cancels) != 1 || be.cancels[0] != id {
		t.Errorf("cancel = %v", be.cancels)
	}
	test.AssertNotificationSent(t, fyne.NewNotification("Transfer failed", "Not enough space on Alice."), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, State: StateFailed, Peer: Peer{Name: "Alice"},
			Result: &Result{State: StateFailed, Code: CodeNoSpace, ByPeer: true, Err: "Not enough space on the receiver: 3 GB needed."}})
	})
	// Cancel was pressed, but the engine says it failed first: its word wins.
	if v.stateLbl.Text != "Not enough space on Alice" || v.cancel.Visible() {
		t.Errorf("after failure: state %q, cancel visible %v", v.stateLbl.Text, v.cancel.Visible())
	}
}

func TestDoneIncomingOffersOpenFolderAndNotifies(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(offerEvent("r1", 2))
	test.Tap(u.prompts.queue[0].accept)
	test.AssertNotificationSent(t, fyne.NewNotification("Files received", "Received 2 files (2.0 kB) from Alice."), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: Peer{Name: "Alice"},
			Result: &Result{State: StateDone, Files: 2, Verified: 2, Bytes: 2000, Destination: "/home/u/Downloads"}})
	})
	v := u.transfers.byID["r1"]
	// No file results were reported: the folder is what can be shown.
	if !v.show.Visible() || v.open.Visible() || v.bar.Value != 1 {
		t.Fatalf("show visible %v, open visible %v, bar %v", v.show.Visible(), v.open.Visible(), v.bar.Value)
	}
	test.Tap(v.show)
	if len(be.opened) != 1 || be.opened[0] != "/home/u/Downloads" {
		t.Errorf("opened = %v", be.opened)
	}
}

// One file received: Open opens it, Show in folder shows it selected, and
// the notification's buttons do the same.
func TestOneReceivedFileOpensAndShows(t *testing.T) {
	u, be, _ := newTestUI(t)
	var notes []string
	var acts []NoticeAction
	u.opt.NotifyActions = func(title, _ string, a []NoticeAction) { notes = append(notes, title); acts = a }
	u.ApplyTransfer(offerEvent("r1", 1))
	test.Tap(u.prompts.queue[0].accept)
	u.ApplyTransfer(TransferEvent{Kind: TransferFile, ID: "r1", Direction: Incoming, State: StateActive,
		File: &FileResult{Path: "a.txt", SavedAs: "a (1).txt", Size: 10, Verified: true}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: Peer{Name: "Alice"},
		Result: &Result{State: StateDone, Files: 1, Verified: 1, Bytes: 10, Destination: "/home/u/Downloads"}})
	v := u.transfers.byID["r1"]
	if !v.open.Visible() || !v.show.Visible() {
		t.Fatalf("open %v, show %v", v.open.Visible(), v.show.Visible())
	}
	test.Tap(v.open)
	test.Tap(v.show)
	want := "/home/u/Downloads/a (1).txt"
	if len(be.files) != 1 || be.files[0] != want || len(be.shown) != 1 || be.shown[0] != want {
		t.Fatalf("opened %v, shown %v; want %s", be.files, be.shown, want)
	}
	if notes[len(notes)-1] != "Files received" || len(acts) != 2 || acts[0].Label != "Open" || acts[1].Label != "Show in folder" {
		t.Fatalf("notification %v with %+v", notes, acts)
	}
	acts[0].Do()
	acts[1].Do()
	if len(be.files) != 2 || len(be.shown) != 2 {
		t.Fatalf("the notification's buttons did nothing: %v %v", be.files, be.shown)
	}
}

func TestDetailsShowMetricsAndFileResults(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "m1"
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Alice"}})
	test.Tap(u.transfers.byID[id].details)
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, State: StateActive, Metrics: &Metrics{Transport: "quic",
		SmoothedRTT: 1500 * time.Microsecond, MinRTT: 300 * time.Microsecond, CongestionWindow: 1_200_000, CongestionEvents: 2,
		PacketsLost: 7, PathMTU: 1441, DatagramsPerCall: 9.5, GSO: true, DatagramsPerRecvCall: 31.4, GRO: true}})
	u.ApplyTransfer(TransferEvent{Kind: TransferFile, ID: id, State: StateActive, File: &FileResult{Path: "a\u202etxt.exe", Size: 10, Verified: true}})
	got := u.transfers.detailLabel.Text + "\n" + u.transfers.detailFiles.Text
	if !contains(got, "QUIC", "1.50 ms", "1.2 MB", "Congestion events: 2", "packets lost: 7", "Path MTU: 1441", "9.5 (GSO on)", "receive call: 31.4 (GRO on)", `"a\u202etxt.exe"`, "verified") {
		t.Errorf("details = %q", got)
	}
}

func TestRunCoalescesProgress(t *testing.T) {
	u, _, _ := newTestUI(t)
	var mu sync.Mutex
	var fns []func()
	u.opt.Do = func(f func()) { mu.Lock(); fns = append(fns, f); mu.Unlock() }
	u.opt.Refresh = time.Hour // only non-progress events flush in this test

	ctx, cancel := context.WithCancel(context.Background())
	tr := make(chan TransferEvent)
	done := make(chan error)
	go func() { done <- u.Run(ctx, nil, tr) }()
	tr <- TransferEvent{Kind: TransferState, ID: "c", Direction: Outgoing, State: StateActive, Peer: Peer{Name: "A"}}
	for i := 1; i <= 100; i++ {
		tr <- TransferEvent{Kind: TransferProgress, ID: "c", State: StateActive, Progress: &Progress{Bytes: int64(i), Total: 100}}
	}
	tr <- TransferEvent{Kind: TransferState, ID: "c", State: StateVerifying}
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	if len(fns) != 2 {
		t.Fatalf("UI updates = %d, want 2 (100 progress events coalesced)", len(fns))
	}
	for _, f := range fns {
		f()
	}
	v := u.transfers.byID["c"]
	if v.progress.Bytes != 100 || v.state != StateVerifying {
		t.Errorf("bytes %d state %s, want the last progress then verifying", v.progress.Bytes, v.state)
	}
}

func TestTrayMenuReceivingToggle(t *testing.T) {
	u, be, _ := newTestUI(t)
	var installed *fyne.Menu
	u.OnTrayChanged = func(m *fyne.Menu) { installed = m }
	recv := u.Tray().Items[1]
	if recv.Label != "Receiving" || !recv.Checked {
		t.Fatalf("tray item %q checked %v", recv.Label, recv.Checked)
	}
	be.settings.Policy = PolicyTrusted
	recv.Action()
	if be.settings.Policy != PolicyOff || installed == nil || installed.Items[1].Checked {
		t.Fatalf("policy %s after switching off; menu reinstalled %v", be.settings.Policy, installed != nil)
	}
	installed.Items[1].Action()
	if be.settings.Policy != PolicyTrusted {
		t.Fatalf("policy %s after switching back on, want the previous one", be.settings.Policy)
	}
}

func TestSettingsSave(t *testing.T) {
	u, be, _ := newTestUI(t)
	s := u.settings
	s.name.SetText("Desk 2")
	s.policy.SetSelected(policyLabels[1])
	test.Tap(s.auto)
	test.Tap(s.save)
	if be.settings.DeviceName != "Desk 2" || be.settings.Policy != PolicyTrusted || !be.settings.AutoAcceptTrusted {
		t.Fatalf("saved %+v", be.settings)
	}
}

func rowText(r *deviceRow) string {
	var out []string
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *fyne.Container:
			for _, c := range x.Objects {
				walk(c)
			}
		case *widget.Label:
			out = append(out, x.Text)
		}
	}
	walk(r.obj)
	return strings.Join(out, "\n")
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestCloseHidesToTrayOnceNoticed(t *testing.T) {
	u, be, _ := newTestUI(t)
	test.AssertNotificationSent(t, fyne.NewNotification("Ferry is still receiving",
		"Ferry keeps running in the tray so nearby devices can send you files. Quit it from the tray menu."), func() {
		if !u.HandleClose(true) {
			t.Fatal("with a tray and receiving on, closing must hide")
		}
	})
	if !be.settings.TrayNoticeShown {
		t.Fatal("the notice was not recorded")
	}
	test.AssertNotificationSent(t, nil, func() { u.HandleClose(true) })
	be.settings.Policy = PolicyOff
	if u.HandleClose(true) {
		t.Fatal("with receiving off, closing must quit")
	}
}

// reach is hostport over each of kinds, as a device's addresses.
func reach(hostport string, kinds ...addr.Kind) []addr.Addr {
	var out []addr.Addr
	for _, k := range kinds {
		out = append(out, addr.New(k, hostport))
	}
	return out
}

// The prompt measures the free space against the disk the files take (a
// million one-byte files take 4 GB of blocks), not their bytes.
func TestPromptSpaceCountsTheDiskTheFilesTake(t *testing.T) {
	for _, tc := range []struct {
		disk   int64
		want   string
		accept bool
	}{
		{0, "2.0 GB free", true},
		{1_000_000, "2.0 GB free", true},
		{4_096_000_000, "Not enough space: 4.1 GB needed, 2.0 GB free", false},
	} {
		u, _, _ := newTestUI(t)
		ev := offerEvent("t1", 1)
		ev.Offer.FreeBytes, ev.Offer.Disk = 2_000_000_000, tc.disk
		u.ApplyTransfer(ev)
		p := u.prompts.queue[0]
		if p.space.Text != tc.want || p.accept.Disabled() == tc.accept {
			t.Errorf("disk %d: space %q, accept enabled %v; want %q, %v", tc.disk, p.space.Text, !p.accept.Disabled(), tc.want, tc.accept)
		}
	}
}

// A send that cannot reach its device says in its row how often it tried,
// and Details why the last try failed (in the engine's words, escaped);
// once it connects, neither.
func TestConnectingRowSaysItsTries(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "c1"
	peer := Peer{Name: "Bench box"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateConnecting, Peer: peer})
	v := u.transfers.byID[id]
	why := "Nothing is listening at 192.0.2.2:47950: is Ferry running there?\u202e"
	for range 2 {
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateRetrying, Peer: peer,
			Result: &Result{State: StateRetrying, Code: CodeConnectionLost, Err: why}})
	}
	if got := v.stateLbl.Text; got != "Connecting to Bench box… (tried twice)" {
		t.Errorf("row: %q", got)
	}
	if got := statusText(u.transfers.status(v)); !strings.Contains(got, "Nothing is listening at 192.0.2.2:47950") || strings.Contains(got, "\u202e") {
		t.Errorf("details = %q", got)
	}
	// The next attempt: still connecting, the count kept.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateConnecting, Peer: peer})
	if got := v.stateLbl.Text; got != "Connecting to Bench box… (tried twice)" {
		t.Errorf("row on the next attempt: %q", got)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive, Peer: peer})
	if got := v.stateLbl.Text; strings.Contains(got, "tried") {
		t.Errorf("row once connected: %q", got)
	}
}
