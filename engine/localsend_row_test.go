package engine

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// lsStatus is the LocalSend row's status in e.Listeners().
func lsStatus(e *Engine) (ListenerStatus, bool) {
	for _, st := range e.Listeners() {
		if st.Transport == ProtocolLocalSend {
			return st, true
		}
	}
	return ListenerStatus{}, false
}

// TestLocalSendRowLifecycle: the LocalSend server is a row of the receiver
// table. StopReceiving refuses new offers (403) while the session being
// decided goes on to its end, then the port is released; Start serves
// again.
func TestLocalSendRowLifecycle(t *testing.T) {
	e, row, addr := lsEngine(t, Options{Accept: AcceptAsk}, LocalSendOptions{})
	if st, ok := lsStatus(e); !ok || st.Addr != addr || st.Err != "" || st.Note != "" {
		t.Fatalf("row status %+v (%v) in %+v", st, ok, e.Listeners())
	}
	events, unsub := e.Subscribe(256)
	defer unsub()
	p := testPeer(t)
	done := make(chan *lspeer.SendResult, 1)
	go func() {
		sr, _ := p.Send(context.Background(), addr, row.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "kept.txt", Data: []byte("kept")}}, nil)
		done <- sr
	}()
	var offer Event
	for offer = range events {
		if offer.Kind == EventOffer && offer.Direction == Receiving {
			break
		}
	}
	if err := e.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	if _, ok := lsStatus(e); ok || e.Receiving() {
		t.Fatal("the LocalSend row is listed while not receiving")
	}
	// Withdrawn: a new offer is refused, the port still answers (the
	// offer being decided will upload on it).
	late := testPeer(t)
	if sr, err := late.Send(context.Background(), addr, row.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "late.txt", Data: []byte("x")}}, nil); err != nil || sr.PrepareStatus != http.StatusForbidden {
		t.Fatalf("an offer while not receiving: %+v %v", sr, err)
	}
	if err := e.Decide(offer.TransferID, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if sr := <-done; sr == nil || sr.PrepareStatus != 200 || sr.UploadStatus["kept.txt"] != 200 {
		t.Fatalf("the session that ran on: %+v", sr)
	}
	if b, err := os.ReadFile(filepath.Join(e.DownloadDir(), "kept.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("received %q %v", b, err)
	}
	testutil.WaitFor(t, "the port released after the last session", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if row.Addr() != nil {
		t.Fatalf("released row still at %v", row.Addr())
	}

	// Receiving again: the row listens again (the given listener's
	// address) and takes offers.
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, ok := lsStatus(e); !ok || st.Addr != addr {
		t.Fatalf("after Start: %+v", e.Listeners())
	}
	go func() {
		sr, _ := p.Send(context.Background(), addr, row.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "again.txt", Data: []byte("again")}}, nil)
		done <- sr
	}()
	for ev := range events {
		if ev.Kind == EventOffer && ev.Direction == Receiving {
			if err := e.Decide(ev.TransferID, Decision{Accept: true}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if sr := <-done; sr == nil || sr.UploadStatus["again.txt"] != 200 {
		t.Fatalf("after Start: %+v", sr)
	}
	// StopReceivingNow closes the row at once.
	if err := e.StopReceivingNow(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the port still answers after StopReceivingNow")
	}
}

// TestLocalSendRowFailsAlone: a LocalSend row that cannot open its port is
// reported alone; Ferry's rows go on receiving.
func TestLocalSendRowFailsAlone(t *testing.T) {
	e := startReceiver(t, Options{})
	events, unsub := e.Subscribe(64)
	defer unsub()
	// 192.0.2.1 (TEST-NET) is no address of this machine: nothing binds.
	_, err := e.AddLocalSend(LocalSendOptions{Host: "192.0.2.1"})
	if err == nil {
		t.Fatal("a row on an address of another machine opened")
	}
	st, ok := lsStatus(e)
	if !ok || st.Err == "" || st.Addr != "" {
		t.Fatalf("row status %+v in %+v", st, e.Listeners())
	}
	for _, a := range e.Addrs() {
		if c, err := net.Dial("tcp", a.HostPort()); err == nil {
			c.Close()
		} else if a.Kind == "tcp" {
			t.Fatalf("Ferry's TCP row does not answer: %v", err)
		}
	}
	if len(e.Addrs()) == 0 {
		t.Fatal("Ferry's rows stopped")
	}
	for ev := range events {
		if ev.Kind == EventListener && ev.Listener.Transport == ProtocolLocalSend {
			break
		}
	}
}

// TestLocalSendPortRule: the port asked for when free; when it is taken,
// the port used last time, else any free one, and the row says so.
func TestLocalSendPortRule(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := portOf(taken.Addr())
	e := startReceiver(t, Options{})
	row, err := e.AddLocalSend(LocalSendOptions{Host: "127.0.0.1", Port: takenPort})
	if err != nil {
		t.Fatal(err)
	}
	first := row.Port()
	st, _ := lsStatus(e)
	if first == 0 || first == takenPort || row.Moved() != takenPort || !strings.Contains(st.Note, strconv.Itoa(takenPort)) || !strings.Contains(st.Note, "scanning") {
		t.Fatalf("port %d, moved %d, status %+v", first, row.Moved(), st)
	}
	if b, err := os.ReadFile(filepath.Join(e.opts.ConfigDir, lastPortFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(first) {
		t.Fatalf("last port file %q %v", b, err)
	}
	// Receiving again: still taken, so the port used last time.
	if err := e.StopReceivingNow(); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := row.Port(); got != first {
		t.Fatalf("after a restart the row is on %d, not the last port %d", got, first)
	}
	// Freed: the port asked for, and nothing to say.
	e.StopReceivingNow()
	taken.Close()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := lsStatus(e); row.Port() != takenPort || row.Moved() != 0 || st.Note != "" {
		t.Fatalf("port %d moved %d status %+v", row.Port(), row.Moved(), st)
	}
}

// TestLocalSendRowRemoved: LocalSend turned off on its own (and back on
// with other options) while Ferry's rows go on receiving.
func TestLocalSendRowRemoved(t *testing.T) {
	e, row, addr := lsEngine(t, Options{}, LocalSendOptions{})
	events, unsub := e.Subscribe(64)
	defer unsub()
	ferryRows := len(e.Listeners()) - 1
	if err := e.RemoveReceiver(row); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("the removed row's port still answers")
	}
	if _, ok := lsStatus(e); ok || len(e.Listeners()) != ferryRows || !e.Receiving() {
		t.Fatalf("after removing the row: %+v", e.Listeners())
	}
	if err := e.RemoveReceiver(row); err != nil {
		t.Fatalf("removing a removed row: %v", err)
	}
	// Back on, with a PIN.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	row2, err := e.AddLocalSend(LocalSendOptions{Listener: ln, PIN: "4711"})
	if err != nil {
		t.Fatal(err)
	}
	p := testPeer(t)
	one := []lspeer.SendFile{{Name: "pin.txt", Data: []byte("x")}}
	if sr, err := p.Send(context.Background(), ln.Addr().String(), row2.Fingerprint(), true, "", "", one, nil); err != nil || sr.PrepareStatus != http.StatusUnauthorized {
		t.Fatalf("no PIN: %+v %v", sr, err)
	}
	if sr, err := p.Send(context.Background(), ln.Addr().String(), row2.Fingerprint(), true, "4711", "", one, nil); err != nil || sr.UploadStatus["pin.txt"] != 200 {
		t.Fatalf("with the PIN: %+v %v", sr, err)
	}
	// Removing a row reports nothing as a failure.
	for {
		select {
		case ev := <-events:
			if ev.Kind == EventListener {
				t.Fatalf("removing a row reported %+v", ev.Listener)
			}
			continue
		default:
		}
		break
	}
}
