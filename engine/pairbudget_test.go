package engine

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/pairing"
	"github.com/ferrydrop/ferry/engine/wire"
)

// grindOnce is one try at the code: a fresh identity from addr claiming
// name commits, reads the listener's hello and hangs up without revealing.
// It reports whether the listener answered with its nonce (the try the
// attacker wanted), or the listener's refusal.
func grindOnce(t *testing.T, recv *Engine, id *identity.Identity, addr, name string) (answered bool, refused error) {
	t.Helper()
	p, done := connectRawAs(t, recv, id, addr)
	s, err := p.conn.OpenStream(t.Context())
	if err != nil {
		t.Error(err)
		return false, err
	}
	s.Write([]byte{wire.KindControl})
	p.ctl = newControl(s)
	commit := pairing.Commit(pairing.NewNonce())
	if err := p.ctl.send(&wire.Hello{Version: wire.Version, Name: name, ID: id.ID.String(), Features: []string{featurePair}, Pair: commit}); err != nil {
		t.Error(err)
		return false, err
	}
	m, err := p.ctl.recvTimeout(5 * time.Second)
	p.conn.Close(nil)
	<-done
	switch m := m.(type) {
	case *wire.Hello:
		return m.Pair != "", nil
	case *wire.Cancel:
		return false, &wire.RemoteError{Code: m.Code, Reason: m.Reason}
	}
	t.Errorf("the listener answered a hello with %v, %v", m, err)
	return false, err
}

// Issue #27 (2): an attacker with a fresh identity and a fresh address for
// every try gets at most pairTriesPerWindow hidden tries at the code in
// any pairWindow (so a MITM matches with probability at most 1e-4 within
// the longest wait), paired devices still pair meanwhile, a new device
// can still send (its session has no code, so it cannot pair), and the
// tries come back as the window moves on.
func TestPairingGrindBounded(t *testing.T) {
	clock := &setClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	recv := startReceiver(t, Options{Clock: clock})
	tries := 0
	for i := range 3 * pairTriesPerWindow {
		answered, refused := grindOnce(t, recv, newIdentity(t), fmt.Sprintf("198.51.%d.%d:4000", i/250, 1+i%250), fmt.Sprintf("mallory %d", i))
		if answered {
			tries++
		} else if refused != nil {
			t.Fatalf("try %d refused with %v, want a hello without pairing", i, refused)
		}
		clock.add(time.Second) // 300 tries over 5 minutes: all within one window
	}
	if tries != pairTriesPerWindow {
		t.Errorf("the attacker got %d hidden tries from %d addresses, want %d", tries, 3*pairTriesPerWindow, pairTriesPerWindow)
	}
	if p := mitmChance(tries); p > 1e-4 {
		t.Errorf("%d tries give a MITM %.2g, want at most 1e-4", tries, p)
	}

	// A paired device is not refused: a MITM cannot present its key.
	friend := newIdentity(t)
	if err := recv.trust.Pair(friend.ID.Peer(), "friend", "", clock.Now()); err != nil {
		t.Fatal(err)
	}
	if answered, refused := grindOnce(t, recv, friend, "203.0.113.5:4000", "friend"); !answered {
		t.Errorf("a paired device was refused during the grind: %v", refused)
	}
	// A new device's session goes on without a code: it can send, not pair.
	if answered, refused := grindOnce(t, recv, newIdentity(t), "203.0.113.6:4000", "laptop"); answered || refused != nil {
		t.Errorf("a new device during the grind: answered %v, %v; want a hello without pairing", answered, refused)
	}
	// A real sender that is new here still sends, without a code.
	src := filepath.Join(t.TempDir(), "real.txt")
	writeFile(t, src, 1000)
	if res := sendWait(t, testEngine(t, Options{}), target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Errorf("a real send during the grind: %v", res.Err)
	}
	// The window moves on.
	clock.add(pairWindow)
	if answered, refused := grindOnce(t, recv, newIdentity(t), "203.0.113.6:4000", "laptop"); !answered {
		t.Errorf("a new device after the window: %v", refused)
	}
}

// One address, or one claimed name, gets its own smaller share of hidden
// tries, so that it alone cannot use up everyone's.
func TestPairingGrindPerSourceAndName(t *testing.T) {
	clock := &setClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	recv := testEngine(t, Options{Accept: AcceptAsk, Clock: clock})
	for _, tc := range []struct {
		name string
		addr func(i int) string
		who  func(i int) string
	}{
		{"one address", func(int) string { return "192.0.2.9:4000" }, func(i int) string { return fmt.Sprintf("m%d", i) }},
		{"one name", func(i int) string { return fmt.Sprintf("192.0.2.%d:4000", 100+i) }, func(int) string { return "alice's laptop" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			for i := range 2 * pairTriesPerSource {
				if answered, _ := grindOnce(t, recv, newIdentity(t), tc.addr(i), tc.who(i)); answered {
					tries++
				}
			}
			if tries != pairTriesPerSource {
				t.Errorf("%d hidden tries, want %d", tries, pairTriesPerSource)
			}
		})
	}
}

// Tries under way at once count as they are answered, so an attacker
// gains nothing by trying in parallel.
func TestPairingGrindConcurrent(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk})
	var mu sync.Mutex
	tries := 0
	var wg sync.WaitGroup
	for i := range 2 * pairTriesPerWindow {
		id := newIdentity(t)
		wg.Go(func() {
			if answered, _ := grindOnce(t, recv, id, fmt.Sprintf("198.51.%d.%d:4000", i/250, 1+i%250), fmt.Sprintf("m%d", i)); answered {
				mu.Lock()
				tries++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if tries > pairTriesPerWindow {
		t.Errorf("%d parallel tries were answered, want at most %d", tries, pairTriesPerWindow)
	}
}
