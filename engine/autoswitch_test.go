package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

func TestRandomLoss(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		latest, min time.Duration
		want        bool
	}{
		{120 * ms, 120 * ms, true},
		{145 * ms, 120 * ms, true},             // within a quarter
		{170 * ms, 120 * ms, false},            // a 50 ms queue stood
		{2 * ms, 100 * time.Microsecond, true}, // loopback scheduling noise
		{30 * ms, 20 * ms, false},
	} {
		if got := randomLoss(tc.latest, tc.min); got != tc.want {
			t.Errorf("randomLoss(%v, %v) = %v", tc.latest, tc.min, got)
		}
	}
}

// longPath makes loopback count as a path that is not a clean local link,
// so auto starts on QUIC and may move to TCP.
func longPath(t *testing.T) {
	oldClean, oldSwitch := cleanRTT, switchRTT
	cleanRTT, switchRTT = 0, 0
	t.Cleanup(func() { cleanRTT, switchRTT = oldClean, oldSwitch })
}

func transportEvents(t *testing.T, s *Engine, to Target, src string) (Result, []TransportInfo) {
	t.Helper()
	events, unsub := s.Subscribe(1024)
	defer unsub()
	tr, err := s.Send(context.Background(), to, []string{src}, SendOptions{Transport: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	var infos []TransportInfo
	for ev := range events {
		if ev.Kind == EventTransport {
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
	if !tcpHasBBR(t) {
		t.Skip("the kernel offers no BBR: auto keeps QUIC, nothing to switch")
	}
	longPath(t)
	// Loopback has no queue to tell, but a busy machine (the race detector)
	// delays RTT samples by milliseconds; the classifier has its own test.
	old := lossRTTSlack.Swap(int64(time.Second))
	t.Cleanup(func() { lossRTTSlack.Store(old) })
	recv := startReceiver(t, Options{})
	q, tc := recv.Addrs()
	relay := newLossyRelay(t, q, 0.05)
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "a.bin")
	data := writeFile(t, src, 24<<20)
	rxEvents, unsub := recv.Subscribe(1024)
	defer unsub()
	res, infos := transportEvents(t, send, Target{QUICAddr: relay.Addr(), TCPAddr: tc}, src)
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
	longPath(t)
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 4<<20)
	res, infos := transportEvents(t, send, target(recv), src)
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	if len(infos) == 0 || infos[0].Name != "quic" || !strings.Contains(infos[0].Reason, "starts at once") {
		t.Fatalf("transport events %+v", infos)
	}
	t.Logf("events %+v", infos)
}

// An attach names a running QUIC session and must come from its peer; the
// receiver refuses anything else and keeps serving the session.
func TestAttachRefused(t *testing.T) {
	recv := startReceiver(t, Options{})
	q, tc := recv.Addrs()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	owner := newTestIdentity(t)
	c, err := dialQUIC(ctx, q, owner.TLSConfig(false, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(0, "")
	if _, err := c.OpenStream(ctx); err != nil { // registers the session
		t.Fatal(err)
	}
	token := c.(*quicSession).token
	for deadline := time.Now().Add(5 * time.Second); recv.quicSession(token) == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the receiver never registered the session")
		}
	}
	var unknown [tcpTokenLen]byte
	for _, tc2 := range []struct {
		name  string
		dial  func() (Conn, error)
		token [tcpTokenLen]byte
		want  error
	}{
		{"unknown token", func() (Conn, error) { return dialTCP(ctx, tc, owner.TLSConfig(false, nil)) }, unknown, errTCPUnknown},
		{"other device", func() (Conn, error) { return dialTCP(ctx, tc, newTestIdentity(t).TLSConfig(false, nil)) }, token, errTCPPeer},
		{"over QUIC", func() (Conn, error) { return dialQUIC(ctx, q, owner.TLSConfig(false, nil)) }, token, nil},
		{"the session's peer", func() (Conn, error) { return dialTCP(ctx, tc, owner.TLSConfig(false, nil)) }, token, nil},
		{"a second attach", func() (Conn, error) { return dialTCP(ctx, tc, owner.TLSConfig(false, nil)) }, token, errTCPFull},
	} {
		t.Run(tc2.name, func(t *testing.T) {
			conn, err := tc2.dial()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(0, "")
			_, err = attachTCP(ctx, conn, tc2.token)
			switch {
			case tc2.name == "over QUIC":
				// A QUIC session's first stream must carry the session
				// header: the listener closes the connection.
				if err == nil {
					t.Error("attach over QUIC accepted")
				}
			case !errors.Is(err, tc2.want) && (tc2.want != nil || err != nil):
				t.Errorf("attach: %v, want %v", err, tc2.want)
			}
		})
	}
}

// tcpHasBBR reports whether Ferry's TCP sockets get BBR here.
func tcpHasBBR(t *testing.T) bool {
	t.Helper()
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	return tcpCongestion == "" && strings.Contains(string(b), "bbr")
}

// A switch stops the first transport's workers, and the new ones first send
// again what may still be in flight there (at most a flow-control window per
// stream), then carry on where the first ones stopped; chunks of files the
// receiver already saved are not sent again.
func TestSwitchMovesChunksInFlight(t *testing.T) {
	const chunk = 1 << 20
	tx := &sender{chunkSize: chunk, leaves: map[int]*fileLeaves{}}
	for i, size := range []int64{40 * chunk, 2 * chunk} {
		tx.files = append(tx.files, localFile{FileEntry: wire.FileEntry{Path: fmt.Sprint(i), Size: size}})
		tx.accepted = append(tx.accepted, i)
		tx.leaves[i] = &fileLeaves{tree: merkle.NewTree(int(size / chunk))}
	}
	first := []*workerState{{id: 0, track: true}, {id: 1, track: true}}
	for range 15 {
		for _, ws := range first {
			if _, _, _, ok := tx.take(ws); !ok {
				t.Fatal("ran out of chunks")
			}
		}
	}
	tx.moveInFlight()
	if _, _, _, ok := tx.take(first[0]); ok {
		t.Fatal("a worker of the first transport took a chunk after the switch")
	}
	// Per stream, what lies more than a window behind its write offset was read.
	perStream := int(inFlightWindow/(chunk+wire.DataHeaderLen)) + 1
	if len(tx.moved) < 2 || len(tx.moved) > 2*perStream {
		t.Fatalf("%d chunks moved, want at most %d per stream", len(tx.moved), perStream)
	}
	wantMoved := len(tx.moved)
	next := &workerState{gen: 1, id: 2}
	seen := map[[2]int]bool{}
	for i := range wantMoved {
		fi, ci, moved, ok := tx.take(next)
		if !ok || !moved || fi != 0 || ci < 30-2*perStream || ci >= 30 {
			t.Fatalf("take %d after the switch: file %d chunk %d moved=%v ok=%v", i, fi, ci, moved, ok)
		}
		seen[[2]int{fi, ci}] = true
	}
	if len(seen) != wantMoved {
		t.Errorf("moved chunks repeat: %v", seen)
	}
	if fi, ci, moved, ok := tx.take(next); !ok || moved || fi != 0 || ci != 30 {
		t.Errorf("after the moved chunks: file %d chunk %d moved=%v, want file 0 chunk 30", fi, ci, moved)
	}
	// Moved chunks of a file the receiver saved meanwhile are dropped.
	tx.moved = []chunkRef{{file: 1, chunk: 0}, {file: 0, chunk: 29}}
	tx.noteResolved(1)
	if fi, ci, moved, _ := tx.take(next); fi != 0 || ci != 29 || !moved {
		t.Errorf("took file %d chunk %d moved=%v, want file 0 chunk 29", fi, ci, moved)
	}
}
