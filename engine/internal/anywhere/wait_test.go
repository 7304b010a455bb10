package anywhere_test

import (
	"bytes"
	"context"
	"github.com/ferrydrop/ferry/internal/testutil"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/relay"
)

// countingMailbox serves a relay's mailbox with lim on loopback, counting
// its waits and takes; without waits it answers them 404, as a relay
// from before them did. It returns the mailbox's address.
func countingMailbox(t *testing.T, lim relay.Limits, waits bool) (addr string, waited, took *atomic.Int32) {
	t.Helper()
	box := relay.NewMailbox(lim)
	waited, took = new(atomic.Int32), new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case anywhere.PathWait:
			if !waits {
				http.NotFound(w, r)
				return
			}
			waited.Add(1)
		case anywhere.PathQueues:
			took.Add(1)
		}
		box.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), waited, took
}

// TestAnswerThroughWaits: a caller waits for the callee's answer in waits
// the relay holds (one request while the answer is 300 ms away, where
// polling every 100 ms asks some three times), and from an older relay,
// which refuses waits (404), by polling as before.
func TestAnswerThroughWaits(t *testing.T) {
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 7
	const call = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name  string
		waits bool
	}{{"a relay that holds waits", true}, {"an older relay", false}} {
		t.Run(tc.name, func(t *testing.T) {
			relayAddr, waits, takes := countingMailbox(t, relay.Limits{}, tc.waits)
			mb := anywhere.NewMailbox(relayAddr, "")
			defer mb.Close()
			req := anywhere.DialRequest{Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID}
			answerBox := anywhere.AnswerName(s, call)
			pushed := make(chan struct{})
			defer func() { <-pushed }() // before the relay closes
			go func() {
				defer close(pushed)
				time.Sleep(300 * time.Millisecond)
				blob, err := anywhere.Seal(s, answerBox, anywhere.Message{Kind: anywhere.KindAnswer, From: b.ID.String(), To: a.ID.String(), At: time.Now().Unix(), Call: call,
					Ufrag: "abcd", Pwd: "abcdefghijklmnopqrstuv", Candidates: []string{"candidate:1 1 udp 1 127.0.0.1 5000 typ host"}})
				if err != nil {
					t.Error(err)
					return
				}
				if err := anywhere.NewMailbox(relayAddr, "").Push(t.Context(), answerBox, blob); err != nil {
					t.Error(err)
				}
			}()
			m, err := anywhere.WaitAnswer(t.Context(), mb, req, call)
			if err != nil || m.Call != call {
				t.Fatalf("answer %+v, %v", m, err)
			}
			if tc.waits && (waits.Load() != 1 || takes.Load() != 0) {
				t.Errorf("%d waits and %d takes for one answer, want one wait", waits.Load(), takes.Load())
			}
			if !tc.waits && takes.Load() < 2 {
				t.Errorf("%d takes: the caller did not poll an older relay", takes.Load())
			}
		})
	}
}

// TestIdleReceiverWaits: a receiving device with no calls holds one wait
// at the relay (a long poll) where it asked every interval before; from an
// older relay, which refuses waits, it asks every interval, as before.
func TestIdleReceiverWaits(t *testing.T) {
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 9
	for _, tc := range []struct {
		name  string
		waits bool
	}{{"a relay that holds waits", true}, {"an older relay", false}} {
		t.Run(tc.name, func(t *testing.T) {
			relayAddr, waits, takes := countingMailbox(t, relay.Limits{Wait: time.Hour}, tc.waits)
			started := make(chan struct{})
			rcv := &anywhere.Server{
				Relay: relayAddr, Self: b.ID, Loopback: true, Poll: 50 * time.Millisecond,
				Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
				Listener: func() *net.UDPAddr { return nil },
				Started:  func() { close(started) },
			}
			ctx, stop := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() { served <- rcv.Run(ctx) }()
			<-started
			time.Sleep(time.Second) // 20 intervals
			stop()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			if tc.waits && (waits.Load() != 1 || takes.Load() != 0) {
				t.Errorf("idle for 20 intervals: %d waits and %d takes, want the one wait held", waits.Load(), takes.Load())
			}
			if !tc.waits && (takes.Load() < 5 || waits.Load() != 0) {
				t.Errorf("idle for 20 intervals at an older relay: %d takes, %d waits", takes.Load(), waits.Load())
			}
		})
	}
}

// stallingMailbox serves a relay's mailbox on loopback whose first holds
// waits (all of them for -1) it holds until their client gives up (past
// the mailbox's request timeout: a slow path) or the test ends. It returns
// the address and how many waits came.
func stallingMailbox(t *testing.T, holds int32) (addr string, waits *atomic.Int32) {
	t.Helper()
	box := relay.NewMailbox(relay.Limits{})
	waits = new(atomic.Int32)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == anywhere.PathWait {
			if n := waits.Add(1); holds < 0 || n <= holds {
				io.ReadAll(r.Body) // read, as the relay reads it: a client gone then ends the request
				select {
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
		}
		box.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before the server closes
	return strings.TrimPrefix(srv.URL, "http://"), waits
}

// TestAnswerAfterAWaitTimedOut: a wait the relay held past the caller's
// request timeout (a slow path) is no answer yet, not a relay gone: the
// caller waits again and gets the answer.
func TestAnswerAfterAWaitTimedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the mailbox's 5 s request timeout")
	}
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 11
	const call = "fedcba9876543210fedcba9876543210"
	relayAddr, waits := stallingMailbox(t, 1)
	answerBox := anywhere.AnswerName(s, call)
	blob, err := anywhere.Seal(s, answerBox, anywhere.Message{Kind: anywhere.KindAnswer, From: b.ID.String(), To: a.ID.String(), At: time.Now().Unix(), Call: call,
		Ufrag: "abcd", Pwd: "abcdefghijklmnopqrstuv", Candidates: []string{"candidate:1 1 udp 1 127.0.0.1 5000 typ host"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := anywhere.NewMailbox(relayAddr, "").Push(t.Context(), answerBox, blob); err != nil {
		t.Fatal(err)
	}
	mb := anywhere.NewMailbox(relayAddr, "")
	defer mb.Close()
	m, err := anywhere.WaitAnswer(t.Context(), mb, anywhere.DialRequest{Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID}, call)
	if err != nil || m.Call != call {
		t.Fatalf("after a wait that timed out: %+v, %v", m, err)
	}
	if waits.Load() < 2 {
		t.Errorf("%d waits", waits.Load())
	}
}

// TestReceiverQuietWhenAWaitTimesOut: a wait the relay holds past the
// receiver's request timeout (a slow path) is no call yet: the receiver
// waits again, and its log says nothing is wrong with the relay.
func TestReceiverQuietWhenAWaitTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the mailbox's 5 s request timeout")
	}
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 13
	relayAddr, waits := stallingMailbox(t, -1)
	var logged bytes.Buffer
	var mu sync.Mutex
	started := make(chan struct{})
	rcv := &anywhere.Server{
		Relay: relayAddr, Self: b.ID, Loopback: true, Poll: 50 * time.Millisecond,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		Started:  func() { close(started) },
		Log: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logged.Write(p)
		}), nil)),
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- rcv.Run(ctx) }()
	<-started
	testutil.WaitFor(t, "a second wait after the first timed out", func() bool { return waits.Load() >= 2 })
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "rendezvous: calls") {
		t.Errorf("a wait that timed out was logged as a failure:\n%s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
