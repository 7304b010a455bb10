package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// askingReceiver is "Bob's laptop", receiving, whose user is asked about
// every offer.
func askingReceiver(t *testing.T) *engine.Engine {
	t.Helper()
	return startedEngine(t, engine.Options{ConfigDir: t.TempDir(), Name: "Bob's laptop", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0", Accept: engine.AcceptAsk})
}

// offerWaiting sends a small file from b to recv and returns the offer as
// recv's user is asked about it, and the file.
func offerWaiting(t *testing.T, b *backend, recv *engine.Engine) (engine.Event, string) {
	t.Helper()
	offers, stop := recv.Subscribe(256)
	defer stop()
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(ui.Device{ID: recv.ID(), Name: "Bob's laptop", Addrs: recv.Addrs()}, ui.Items{Paths: []string{file}}); err != nil {
		t.Fatal(err)
	}
	for ev := range offers {
		if ev.Kind == engine.EventOffer && ev.State == engine.StateWaiting {
			return ev, file
		}
	}
	t.Fatal("no offer")
	return engine.Event{}, ""
}

// A send that the sender's Ferry was stopped in the middle of (its app
// quit, or killed: the receiver only sees the connection go) comes back
// when the app starts again on the same config: a row that says so, with
// Retry and Cancel, and when the device is seen the same delivery goes on
// by itself: the receiver is not asked again and what it holds does not
// travel again. Before, nothing of it came back: the receiver waited
// "Interrupted" for good, and the files had to be sent anew.
func TestSendGoesOnAfterTheAppStartsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("two engines, a send cut mid-way and resumed: a few seconds")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	recv := askingReceiver(t)
	var prompts atomic.Int32
	results := make(chan engine.Result, 4)
	revs, stop := recv.Subscribe(4096)
	t.Cleanup(stop)
	go func() {
		for ev := range revs {
			switch {
			case ev.Kind == engine.EventOffer && ev.State == engine.StateWaiting:
				prompts.Add(1)
				recv.Decide(ev.TransferID, engine.Decision{Accept: true})
			case ev.Kind == engine.EventResult && ev.Result != nil:
				results <- *ev.Result
			}
		}
	}()

	const size = 16 << 20
	file := filepath.Join(t.TempDir(), "big.bin")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// The first run: the send is cut after 10 MiB and its app quits, as
	// Run does (the app's context ends, then the engine closes).
	dir := t.TempDir()
	first := newTestBackendIn(t, dir)
	ctx1, quit := context.WithCancel(context.Background())
	first.ctx = ctx1
	out1 := make(chan ui.TransferEvent, 1024)
	goPump(t, ctx1, first, out1, make(chan ui.DeviceEvent, 64))
	gate := cutAfter(t, listening(recv, addr.TCP), 10<<20)
	dev := ui.Device{ID: recv.ID(), Name: "Bob's laptop", Addrs: []addr.Addr{addr.New(addr.TCP, gate.addr())}}
	if err := first.Send(dev, ui.Items{Paths: []string{file}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.cutNow:
	case <-time.After(time.Minute):
		t.Fatal("the gate never cut the send")
	}
	quit()
	first.eng.Close()
	testutil.WaitFor(t, "the receiver to keep what arrived", func() bool {
		ps := recv.Partials()
		return len(ps) == 1 && ps[0].OnDisk > 0 && !ps[0].Receiving
	})
	delivery := recv.Partials()[0].Delivery
	// The receiver's user was asked with the first session's code.
	firstShown := false
	for len(out1) > 0 {
		if ev := <-out1; ev.Kind == ui.TransferPair && ev.ID == delivery && ev.Pair.Shown == ui.CodeShownYes {
			firstShown = true
		}
	}
	if !firstShown {
		t.Error("the first session's code is not said to be shown on the receiver")
	}
	// The quit question promised the rest (ui.SendKeeper): the send is kept.
	if !first.KeptForNextStart(delivery) {
		t.Errorf("the first run does not say it keeps the send of delivery %s for its next start", delivery)
	}

	// The second run, on the same config dir.
	second := newTestBackendIn(t, dir)
	shown := make(chan ui.TransferEvent, 16)
	second.synthetic = func(ev ui.TransferEvent) { shown <- ev }
	second.resumeSends()
	model := transfer.New()
	var seen []ui.TransferEvent // what the window is given, in order
	for len(shown) > 0 {
		ev := <-shown
		seen = append(seen, ev)
		for _, me := range ui.DeliveryEvents(ev) {
			model.Apply(me)
		}
	}
	rows := model.Deliveries()
	if len(rows) != 1 || rows[0].ID != delivery {
		t.Fatalf("rows at the start: %d, want the one of delivery %s", len(rows), delivery)
	}
	row := rows[0]
	if want := "Interrupted: Ferry was closed while sending. It sends the rest when Bob's laptop is back."; row.Status() != want {
		t.Errorf("the row says %q, want %q", row.Status(), want)
	}
	if acts := row.Actions(); !slices.Equal(acts, []transfer.Action{transfer.ActionRetry, transfer.ActionCancel}) {
		t.Errorf("actions %v, want Retry and Cancel", acts)
	}
	if row.Over() {
		t.Error("the kept send is over, while it goes on when its device is back: Clear finished drops its row")
	}
	if row.Count != 1 || row.Files[0].Path != "big.bin" || row.Total != size {
		t.Errorf("the row's files: %+v (total %d)", row.Files, row.Total)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out2, devices := make(chan ui.TransferEvent, 1024), make(chan ui.DeviceEvent, 64)
	goPump(t, ctx, second, out2, devices)
	go pumpDevices(ctx, second.eng, second.disc, second.named, second.deviceBack, devices)
	go func() {
		for {
			select {
			case <-devices:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Discovery sees the device: the send goes on by itself.
	if _, err := second.disc.AddManual(ctx, listening(recv, addr.QUIC)); err != nil {
		t.Fatal(err)
	}
	var sent ui.TransferEvent
	for timeout := time.After(time.Minute); sent.Result == nil; {
		select {
		case ev := <-out2:
			seen = append(seen, ev)
			if ev.Kind == ui.TransferResult {
				sent = ev
			}
		case <-timeout:
			t.Fatal("the send did not end")
		}
	}
	if sent.ID != delivery || sent.Result.State != ui.StateDone {
		t.Fatalf("the send %s ended %s (%q), want delivery %s done", sent.ID, sent.Result.State, sent.Result.Err, delivery)
	}
	var got engine.Result
	for got.State != engine.StateDone {
		select {
		case got = <-results:
		case <-time.After(time.Minute):
			t.Fatal("the receiver did not finish")
		}
	}
	if n := prompts.Load(); n != 1 {
		t.Errorf("the receiver was asked %d times about one delivery, want once", n)
	}
	// What the receiver held from the first run did not travel again.
	kept := got.Kept
	if got.Delivery != delivery || kept <= 0 || sent.Result.Kept != kept {
		t.Errorf("the receiver's result: delivery %s, kept %d (the sender says %d); want %s, kept > 0", got.Delivery, kept, sent.Result.Kept, delivery)
	}
	if sent.Result.Bytes+kept != size {
		t.Errorf("the second run sent %d bytes; the receiver held %d of %d: want the rest only", sent.Result.Bytes, kept, size)
	}
	t.Logf("the receiver held %d bytes; the second run sent %d", kept, sent.Result.Bytes)
	// The session that went on has a code of its own, which the receiver,
	// not asked again, did not show: the row must not say it showed none.
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	u := ui.New(a, w, second, ui.Device{ID: second.eng.ID(), Name: second.eng.Name()}, ui.Options{})
	var d ui.Described
	ui.DoAndWait(t.Context(), func() {
		for _, ev := range seen {
			u.ApplyTransfer(ev)
		}
		d = u.Describe()
	})
	if len(d.Transfers) != 1 {
		t.Fatalf("%d rows, want the one send", len(d.Transfers))
	}
	if p := d.Transfers[0].Pair; !strings.Contains(p, "Bob's laptop went on with this send without asking, so its screen does not show this code") ||
		strings.Contains(p, "accepted without showing") {
		t.Errorf("the continued send's code strip: %q", p)
	}
	testutil.WaitFor(t, "the ended send to be forgotten", func() bool { return len(second.sends.list()) == 0 })
	if second.KeptForNextStart(delivery) {
		t.Errorf("a send that ended is still said to go on at the next start")
	}
	if _, err := os.Stat(filepath.Join(dir, sendsFile)); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", sendsFile, err)
	}
}

// startWithKept starts the app's backend on config dir where an earlier
// run kept sends: each is shown (its offer and its result, read here) and
// waits for its device. The rows' later events come on shown.
func startWithKept(t *testing.T, dir string, sends ...unfinishedSend) (*backend, chan ui.TransferEvent) {
	t.Helper()
	raw, err := json.Marshal(sends)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sendsFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	back := newTestBackendIn(t, dir)
	shown := make(chan ui.TransferEvent, 16)
	back.synthetic = func(ev ui.TransferEvent) { shown <- ev }
	back.resumeSends()
	if len(shown) != 2*len(sends) {
		t.Fatalf("%d events for %d kept sends, want an offer and a result each", len(shown), len(sends))
	}
	for len(shown) > 0 {
		<-shown
	}
	return back, shown
}

// A kept send whose file was deleted since fails in its row as Retry's does
// ("could not start", and why); it is not kept for the next start. Cancel
// of one that waits for its device forgets it.
func TestKeptSendWithItsFileGone(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	// A device ID of the right form (a send checks it before its files).
	bobs, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: "Bob's laptop", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	bobID := bobs.ID()
	bobs.Close()
	dir := t.TempDir()
	gone := filepath.Join(t.TempDir(), "gone.txt")
	other := filepath.Join(t.TempDir(), "other.txt")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sends := []unfinishedSend{
		{Delivery: "0123456789abcdef01234567", PeerID: bobID, PeerName: bob.Name, Paths: []string{gone},
			Addrs: []addr.Addr{addr.New(addr.TCP, "127.0.0.1:9")}},
		{Delivery: "89abcdef0123456701234567", PeerID: bobID, PeerName: bob.Name, Paths: []string{other}},
	}
	back, shown := startWithKept(t, dir, sends...)
	if err := back.Retry(sends[0].Delivery); err != nil {
		t.Fatal(err)
	}
	var ev ui.TransferEvent
	select {
	case ev = <-shown:
	case <-time.After(time.Minute):
		t.Fatal("no result for the send of a deleted file")
	}
	if ev.ID != sends[0].Delivery || ev.Result == nil || !ev.Result.NotStarted ||
		!strings.HasPrefix(ev.Result.Err, "The transfer could not start: ") || !strings.Contains(ev.Result.Err, "gone.txt") {
		t.Fatalf("its row got %+v (%+v)", ev, ev.Result)
	}
	if err := back.Cancel(sends[1].Delivery); err != nil {
		t.Fatal(err)
	}
	if left := back.sends.list(); len(left) != 0 {
		t.Errorf("kept still: %+v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, sendsFile)); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", sendsFile, err)
	}
}

// The kept sends are bounded (the newest maxSends), an entry that cannot
// be resumed (edited by hand) is left out while the others load, and a
// send whose end came before it was kept is not kept.
func TestSendStoreBoundsAndChecks(t *testing.T) {
	dir := t.TempDir()
	st, err := openSends(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := func(i int) string { return fmt.Sprintf("%024x", i) }
	for i := range maxSends + 5 {
		if err := st.add(unfinishedSend{Delivery: id(i), PeerID: "dev", Paths: []string{"/x/a.bin"}}); err != nil {
			t.Fatal(err)
		}
	}
	if all := st.list(); len(all) != maxSends || all[0].Delivery != id(5) {
		t.Fatalf("%d kept, the oldest %s; want %d from %s", len(all), all[0].Delivery, maxSends, id(5))
	}
	// Edited by hand: a relative path, no device, nothing to send.
	raw, err := os.ReadFile(filepath.Join(dir, sendsFile))
	if err != nil {
		t.Fatal(err)
	}
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	all[0]["paths"] = []string{"a.bin"}
	delete(all[1], "peer_id")
	delete(all[2], "paths")
	raw, _ = json.Marshal(all)
	if err := os.WriteFile(filepath.Join(dir, sendsFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := openSends(dir)
	if err != nil {
		t.Fatal(err)
	}
	if left := again.list(); len(left) != maxSends-3 || left[0].Delivery != id(8) {
		t.Fatalf("%d loaded, the first %s; want %d from %s", len(left), left[0].Delivery, maxSends-3, id(8))
	}
	// Its result came first: the send ended; keeping it now would bring
	// it back at the next start.
	if err := again.remove("feedfeedfeedfeedfeedfeed"); err != nil {
		t.Fatal(err)
	}
	if err := again.add(unfinishedSend{Delivery: "feedfeedfeedfeedfeedfeed", PeerID: "dev", Paths: []string{"/x/a.bin"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.get("feedfeedfeedfeedfeedfeed"); ok {
		t.Error("a send that had ended is kept")
	}
	if err := again.add(unfinishedSend{Delivery: "feedfeedfeedfeedfeedfeed", PeerID: "dev", Paths: []string{"/x/a.bin"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.get("feedfeedfeedfeedfeedfeed"); !ok {
		t.Error("the same delivery sent again (Retry) is not kept")
	}
}

// A send cancelled here is forgotten, and kept again when Retry sends it
// on (the same delivery: it comes back at the next start like any other).
func TestRetriedSendIsKeptAgain(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	recv := askingReceiver(t)
	b := newTestBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	goPump(t, ctx, b, make(chan ui.TransferEvent, 256), make(chan ui.DeviceEvent, 16))
	offer, file := offerWaiting(t, b, recv)
	id := offer.Delivery
	testutil.WaitFor(t, "the send to be kept", func() bool { _, ok := b.sends.get(id); return ok })
	if err := b.Cancel(id); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the cancelled send to be forgotten", func() bool { _, ok := b.sends.get(id); return !ok })
	if err := b.Retry(id); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the retried send to be kept again", func() bool {
		s, ok := b.sends.get(id)
		return ok && slices.Equal(s.Paths, []string{file}) && s.PeerID == recv.ID()
	})
}

// A kept send resumed while it runs already (the user's Retry, and its
// device seen a moment later) leaves the running send alone: no "could not
// start" in its row, and it stays kept until it ends.
func TestKeptSendResumedWhileItRuns(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	recv := askingReceiver(t)
	b := newTestBackend(t)
	shown := make(chan ui.TransferEvent, 16)
	b.synthetic = func(ev ui.TransferEvent) { shown <- ev }
	offer, _ := offerWaiting(t, b, recv)
	id := offer.Delivery
	testutil.WaitFor(t, "the send to be kept", func() bool { _, ok := b.sends.get(id); return ok })
	s, _ := b.sends.get(id)
	if err := b.resumeSend(s); err != nil {
		t.Fatal(err)
	}
	if err := recv.Decide(offer.TransferID, engine.Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	tr, err := b.eng.Transfer(id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the send did not end")
	}
	if r := tr.Result(); r.State != engine.StateDone {
		t.Fatalf("the send ended %s (%q)", r.State, r.Err)
	}
	if len(shown) > 0 {
		t.Errorf("its row got %+v", (<-shown).Result)
	}
}

// A kept send cancelled from its row at the start, before it ever went on,
// is in History as a send the user cancelled is: "Cancelled by you", its
// files and its device, once however often Cancel is pressed. Before, it
// left no entry: nothing ran, so no result came through the events that
// History is written from, and the earlier run's quit wrote none.
func TestKeptSendCancelledAtTheStartIsInHistory(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "report.pdf")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bobID := strings.Repeat("B", 51) + "Q"
	kept := unfinishedSend{Delivery: "0123456789abcdef01234567", PeerID: bobID, PeerName: bob.Name, Paths: []string{file},
		Text: "the notes", Started: time.Now().Add(-time.Hour)}
	back, _ := startWithKept(t, dir, kept)
	for range 2 {
		if err := back.Cancel(kept.Delivery); err != nil && !errors.Is(err, engine.ErrUnknownTransfer) {
			t.Fatal(err)
		}
	}
	var found []ui.HistoryEntry
	for _, e := range back.history.list() {
		if e.ID == kept.Delivery || e.Delivery == kept.Delivery {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d History entries for the cancelled send, want 1: %+v", len(found), found)
	}
	e := found[0]
	if e.Direction != ui.Outgoing || e.State != ui.StateCancelled || e.Code != ui.CodeCancelled || e.ByPeer {
		t.Errorf("the entry says %v %s (%s, by the peer %v), want an outgoing send cancelled by you", e.Direction, e.State, e.Code, e.ByPeer)
	}
	if e.PeerID != bobID || e.PeerName != bob.Name || e.Delivery != kept.Delivery {
		t.Errorf("the entry names %q (%s), delivery %q; want %q (%s), %q", e.PeerName, e.PeerID, e.Delivery, bob.Name, bobID, kept.Delivery)
	}
	if !slices.Equal(e.Names, []string{"report.pdf"}) || e.Items != 1 || !slices.Equal(e.Paths, []string{file}) || e.Text != kept.Text {
		t.Errorf("the entry's items: names %q (%d), paths %q, text %q", e.Names, e.Items, e.Paths, e.Text)
	}
	if e.Finished.Before(kept.Started.Add(time.Minute)) {
		t.Errorf("the entry ended %v, before the cancel", e.Finished)
	}
}
