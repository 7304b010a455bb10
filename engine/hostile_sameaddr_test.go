package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/hostile"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Issue #27 (4): floods from the real sender's own address (a laptop behind
// the flooder's NAT, or on its host) do not make the sender's transfer
// fail: idle TCP connections, QUIC handshakes that never finish, and QUIC
// connections that never open a stream. Each flood holds more than one
// address's share of the receiver's places (join.MaxPendingPerSource, the
// QUIC listener's live connections per address) and renews what the
// receiver ends, for as long as the real send runs. ferry-bench hostile
// runs the same floods with 1000 workers against a ferry-cli receive.
func TestFloodFromTheSendersOwnAddress(t *testing.T) {
	t.Parallel()
	// The sender dials the receiver on 127.0.0.1 from 127.0.0.1.
	const own = "127.0.0.1"
	// More workers than an address has places for: join.MaxPendingPerSource
	// (16) handshakes; 64 live QUIC connections.
	const handshakeWorkers, liveWorkers = 24, 72
	cases := []struct {
		name, over string
		workers    int64
		flood      func(ctx context.Context, p hostile.Peer, recv *Engine, st *hostile.Stats) error
	}{
		{"idle TCP connections", "tcp", handshakeWorkers, func(ctx context.Context, p hostile.Peer, recv *Engine, st *hostile.Stats) error {
			p.FloodIdleTCP(ctx, listening(recv, addr.TCP), handshakeWorkers, st)
			return nil
		}},
		{"QUIC handshakes that never finish", "quic", liveWorkers, func(ctx context.Context, p hostile.Peer, recv *Engine, st *hostile.Stats) error {
			return p.FloodStalledHandshakes(ctx, listening(recv, addr.QUIC), liveWorkers, st)
		}},
		{"QUIC connections without a stream", "quic", handshakeWorkers, func(ctx context.Context, p hostile.Peer, recv *Engine, st *hostile.Stats) error {
			return p.FloodSilentQUIC(ctx, listening(recv, addr.QUIC), handshakeWorkers, st)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() {
				t.Skip("seconds under -race; TestFloodFromOwnAddress (package quic) and TestIdleFloodFromOwnAddress (package tcp) cover the listeners")
			}
			recv := startReceiver(t, Options{})
			ctx, cancel := context.WithCancel(t.Context())
			var st hostile.Stats
			var flooded sync.WaitGroup
			var floodErr error
			flooded.Go(func() { floodErr = tc.flood(ctx, hostile.Peer{From: own, Dir: t.TempDir()}, recv, &st) })
			t.Cleanup(func() {
				cancel()
				began := time.Now()
				flooded.Wait()
				t.Logf("flood ended after %v", time.Since(began))
				if floodErr != nil {
					t.Error(floodErr)
				}
			})
			began := time.Now()
			// Every worker began; over TCP every one twice: the receiver
			// ended a first round (on Linux idle connections reach it after
			// TCP_DEFER_ACCEPT's 5 s), so they hold what they can.
			rounds := map[string]int64{"tcp": 2, "quic": 1}[tc.over]
			testutil.WaitFor(t, "the flood to renew its connections", func() bool { return st.Tried.Load() >= rounds*tc.workers })
			t.Logf("flood in place after %v", time.Since(began))

			src := t.TempDir()
			want := writeFile(t, filepath.Join(src, "real.bin"), 1<<20)
			send := testEngine(t, Options{})
			start := time.Now()
			res := sendWait(t, send, target(recv), []string{filepath.Join(src, "real.bin")}, SendOptions{Transport: tc.over})
			if res.State != StateDone {
				t.Fatalf("the real send over %s from the flooder's address: %v (the flood: %s)", tc.over, res.Err, &st)
			}
			if got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "real.bin")); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the real file arrived wrong (%v)", err)
			}
			t.Logf("the real send took %v; the flood meanwhile: %d tries; %s", time.Since(start), st.Tried.Load(), &st)
		})
	}
}
