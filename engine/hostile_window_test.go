package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/hostile"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Issue #27 (1): QUIC connections that fill their streams before the
// receiver read their header get one small window each, not quic-go's
// default windows, while a real sender's transfer (admitted after its
// hello) gets through at full windows.
func TestWindowFloodBeforeTheHello(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, Options{Transport: TransportConfig{HandshakeTimeout: time.Second}})
	q := listening(recv, addr.QUIC)
	ctx, cancel := context.WithCancel(t.Context())
	var st hostile.Stats
	var sent atomic.Int64
	flooded := make(chan error, 1)
	from := transporttest.LoopbackSource(t, 9).String()
	go func() {
		flooded <- hostile.Peer{From: from, Dir: t.TempDir()}.FloodWindows(ctx, q, 8, 5, &st, &sent)
	}()

	src := t.TempDir()
	want := writeFile(t, filepath.Join(src, "real.bin"), 8<<20)
	send := testEngine(t, Options{})
	start := time.Now()
	res := sendWait(t, send, target(recv), []string{filepath.Join(src, "real.bin")}, SendOptions{Transport: "quic"})
	if res.State != StateDone {
		t.Fatalf("the real send during the flood: %v", res.Err)
	}
	if got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "real.bin")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the real file arrived wrong (%v)", err)
	}

	t.Logf("the real send took %v", time.Since(start))
	// Each flooding connection is ended by the receiver's handshake
	// timeout; let a few rounds of them end before counting.
	testutil.WaitFor(t, "eight streams to be opened", func() bool { return st.Opened.Load() >= 8 })
	cancel()
	if err := <-flooded; err != nil {
		t.Fatal(err)
	}
	conns := st.Opened.Load() + st.Failed.Load()
	t.Logf("%d flooding connections, %d bytes in; %s", conns, sent.Load(), &st)
	const perConn = 512<<10 + 5*2048 // the initial connection window, and a packet per stream
	if got := sent.Load(); got > conns*perConn {
		t.Errorf("%d flooding connections got %d bytes in (%d each), want at most %d each", conns, got, got/conns, perConn)
	}
	if sent.Load() == 0 {
		t.Error("the flood sent nothing")
	}
}
