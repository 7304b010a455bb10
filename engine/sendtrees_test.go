package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
)

// TestSenderRootsMatchTheReceivers: the sender makes each file's Merkle
// tree when its first chunk goes out and drops it once the file is
// resolved (issue 30); the root it reports for every file is still the
// receiver's.
func TestSenderRootsMatchTheReceivers(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "tree")
	for i := range 40 {
		writeFile(t, filepath.Join(src, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d", i)), i*i*37)
	}
	roots := func(e *Engine) (func() map[string]string, func()) {
		evs, stop := e.Subscribe(4096)
		var mu sync.Mutex
		got := map[string]string{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range evs {
				if ev.Kind == EventFile && ev.File.Verified {
					mu.Lock()
					got[ev.File.Path] = ev.File.Root
					mu.Unlock()
				}
			}
		}()
		// A copy: the test reads it while the goroutine above still writes.
		return func() map[string]string { mu.Lock(); defer mu.Unlock(); return maps.Clone(got) }, func() { stop(); <-done }
	}
	sent, stopS := roots(send)
	received, stopR := roots(recv)
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{})
	if res.State != StateDone || res.Verified != 40 {
		t.Fatalf("result %+v", res)
	}
	waitUntil(t, func() bool { return len(received()) == 40 && len(sent()) == 40 })
	stopS()
	stopR()
	for p, r := range received() {
		if r == "" || sent()[p] != r {
			t.Errorf("%s: the sender reports root %q, the receiver %q", p, sent()[p], r)
		}
	}
}
