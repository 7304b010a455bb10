package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"

	"github.com/ferrydrop/ferry/engine/addr"
)

// longPath makes loopback count as a path that is not a clean local link,
// so auto starts on QUIC and may move to TCP.
var longPath = TransportConfig{CleanRTT: -1, SwitchRTT: -1, SpreadRTT: -1}

// lossyHeadStart is the dial race's head start for QUIC behind a lossy
// relay. A handshake packet the relay drops is sent again only after
// QUIC's probe timeout (hundreds of milliseconds before any RTT sample),
// and on a busy machine (the race detector, the suite's other packages
// building) the handshake alone can pass the default 200 ms: TCP then took
// the batch from the start ("TCP connected first", a CI rehearsal). These
// tests are about what follows a QUIC start.
const lossyHeadStart = time.Minute

// transportEvents sends src and returns the result and the transport events:
// the choices, and with keepGrowth the growth on random loss too.
func transportEvents(t *testing.T, s *Engine, to Target, src string, keepGrowth bool) (Result, []TransportInfo) {
	t.Helper()
	events, unsub := s.Subscribe(1024)
	defer unsub()
	tr, err := s.Send(context.Background(), to, []string{src}, SendOptions{Transport: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	var infos []TransportInfo
	for ev := range events {
		if ev.Kind == EventTransport && (ev.Transport.Flows == 0 || keepGrowth) {
			infos = append(infos, *ev.Transport)
		}
		if ev.Kind == EventResult {
			break
		}
	}
	return tr.Result(), infos
}

// With random loss on QUIC's path, auto starts on QUIC and moves the rest of
// the batch to TCP (with BBR); the file arrives verified and the result says
// TCP carried it, and why.
func TestAutoSwitchesToTCPOnRandomLoss(t *testing.T) {
	t.Parallel()
	if !transporttest.HasBBR() {
		t.Skip("the kernel offers no BBR: auto keeps QUIC, nothing to switch")
	}
	cfg := longPath
	// Loopback has no queue to tell, but a busy machine (the race detector)
	// delays RTT samples by milliseconds; the classifier has its own test.
	cfg.LossRTTSlack = time.Second
	cfg.HeadStart = lossyHeadStart
	recv := startReceiver(t, Options{})
	q, tc := listening(recv, addr.QUIC), listening(recv, addr.TCP)
	relay := transporttest.NewLossyRelay(t, q, 0.05)
	send := testEngine(t, Options{Transport: cfg})
	src := filepath.Join(t.TempDir(), "a.bin")
	data := writeFile(t, src, 24<<20)
	rxEvents, unsub := recv.Subscribe(1024)
	defer unsub()
	res, infos := transportEvents(t, send, Target{Addrs: []addr.Addr{addr.New(addr.QUIC, relay.Addr()), addr.New(addr.TCP, tc)}}, src, false)
	// The receiver ends well too: the streams left on QUIC break when the
	// sender hangs up, after everything was settled.
	for ev := range rxEvents {
		if ev.Kind == EventResult {
			if ev.Result.State != StateDone {
				t.Errorf("receiver: %s: %s", ev.Result.State, ev.Result.Err)
			}
			break
		}
	}
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	if len(infos) != 2 || infos[0].Name != "quic" || infos[1].Name != "tcp" {
		t.Fatalf("transport events %+v, want quic then tcp", infos)
	}
	if !strings.Contains(infos[0].Reason, "starts at once") || !strings.Contains(infos[1].Reason, "random loss") {
		t.Errorf("reasons: %q, %q", infos[0].Reason, infos[1].Reason)
	}
	if res.Transport != "tcp" || res.Reason != infos[1].Reason || res.Metrics == nil || res.Metrics.Transport != "tcp" {
		t.Errorf("result: transport %q, reason %q, metrics %+v", res.Transport, res.Reason, res.Metrics)
	}

	got, err := os.ReadFile(filepath.Join(recv.opts.DownloadDir, "a.bin"))
	if err != nil || string(got) != string(data) {
		t.Fatalf("received file differs (%v)", err)
	}
}

// Without loss QUIC keeps the batch it started.
func TestAutoStartsOnQUICOnLongPaths(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{Transport: longPath})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 4<<20)
	res, infos := transportEvents(t, send, target(recv), src, false)
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	want := "starts at once"
	if !transporttest.HasBBR() {
		want = "cannot use BBR"
	}
	if len(infos) == 0 || infos[0].Name != "quic" || !strings.Contains(infos[0].Reason, want) {
		t.Fatalf("transport events %+v", infos)
	}
	t.Logf("events %+v", infos)
}

// Where TCP cannot run BBR (as on typical desktops), auto does not wait for
// TCP off a clean local link: QUIC carries the batch, and on random loss it
// spreads over more connections, which the result's metrics show.
func TestAutoWithoutBBRSpreadsQUIC(t *testing.T) {
	t.Parallel()
	cfg := longPath
	cfg.TCPCongestion = "reno" // any loss-based control: BBR is not for us
	cfg.LossRTTSlack = time.Second
	cfg.MaxFlows = 4
	cfg.HeadStart = lossyHeadStart
	recv := startReceiver(t, Options{})
	q, tc := listening(recv, addr.QUIC), listening(recv, addr.TCP)
	relay := transporttest.NewLossyRelay(t, q, 0.05)
	send := testEngine(t, Options{Transport: cfg})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 64<<20) // long enough for the loss to be judged, even on a fast machine
	res, infos := transportEvents(t, send, Target{Addrs: []addr.Addr{addr.New(addr.QUIC, relay.Addr()), addr.New(addr.TCP, tc)}}, src, true)
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	if len(infos) < 2 || infos[0].Name != "quic" || !strings.Contains(infos[0].Reason, "cannot use BBR") {
		t.Fatalf("transport events %+v", infos)
	}
	for _, in := range infos[1:] { // each growth says what the path showed
		if in.Name != "quic" || in.Flows < 2 || !strings.Contains(in.Reason, "random loss") {
			t.Errorf("growth event %+v", in)
		}
	}
	if res.Metrics == nil || res.Metrics.Connections < 2 {
		t.Errorf("5%% loss, yet the session stayed on one connection: %+v", res.Metrics)
	}
}

// QUIC's one handshake sample put the path past SwitchRTT (here a relay
// delays QUIC alone, as a busy host's user-space crypto and scheduling did
// in the lab), but TCP's handshake, the kernel's, reads it short: the rest
// of the batch moves to TCP with BBR at once, with no loss to wait for, as
// auto would have chosen from a true sample.
func TestAutoMovesToTCPWhenTCPReadsThePathShort(t *testing.T) {
	t.Parallel()
	if !transporttest.HasBBR() {
		t.Skip("the kernel offers no BBR: auto keeps QUIC, nothing to switch")
	}
	cfg := TransportConfig{HeadStart: lossyHeadStart} // SwitchRTT as shipped
	recv := startReceiver(t, Options{})
	q, tc := listening(recv, addr.QUIC), listening(recv, addr.TCP)
	relay := transporttest.NewDelayRelay(t, q, 80*time.Millisecond)
	send := testEngine(t, Options{Transport: cfg})
	src := filepath.Join(t.TempDir(), "a.bin")
	data := writeFile(t, src, 16<<20)
	res, infos := transportEvents(t, send, Target{Addrs: []addr.Addr{addr.New(addr.QUIC, relay.Addr()), addr.New(addr.TCP, tc)}}, src, false)
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	if len(infos) != 2 || infos[0].Name != "quic" || infos[1].Name != "tcp" {
		t.Fatalf("transport events %+v, want quic then tcp", infos)
	}
	if !strings.Contains(infos[0].Reason, "starts at once") || !strings.Contains(infos[1].Reason, "TCP's handshake reads the path") {
		t.Errorf("reasons: %q, %q", infos[0].Reason, infos[1].Reason)
	}
	if res.Transport != "tcp" || res.Reason != infos[1].Reason {
		t.Errorf("result: transport %q, reason %q", res.Transport, res.Reason)
	}
	got, err := os.ReadFile(filepath.Join(recv.opts.DownloadDir, "a.bin"))
	if err != nil || string(got) != string(data) {
		t.Fatalf("received file differs (%v)", err)
	}
}
