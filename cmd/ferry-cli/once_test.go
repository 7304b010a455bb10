//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// TestOnceWaitsForAnInterruptedSender: `receive --once` receives one
// transfer, and a transfer whose connection was lost under it (the sender
// killed here; a sleeping laptop or a network change does the same) is not
// over: the receiver keeps what arrived and waits for the sender to come back
// with the rest. It used to exit 1 at the interruption, so the sender's
// next attempt found no Ferry there ("vm went away: Ferry was closed
// there") and the transfer could never finish.
func TestOnceWaitsForAnInterruptedSender(t *testing.T) {
	bin := buildCLI(t)
	src := filepath.Join(t.TempDir(), "big.bin")
	writeRandom(t, src, 256<<20, 11)
	rcfg, dl, scfg := t.TempDir(), t.TempDir(), t.TempDir()
	r, addr := startKillReceiver(t, bin, rcfg, dl, "127.0.0.1:0", "tcp", true)
	s := startKillSender(t, bin, scfg, addr, "tcp", src)
	if !waitLanded(t, journalPath(t, rcfg, s), 4, s) {
		t.Fatal("the first sender finished before it could be killed")
	}
	s.kill()
	r.waitLine(t, 0, time.Minute, "the interrupted session's result", isEvent(engine.EventResult, ""))
	for _, ev := range r.events() {
		if ev.Kind == engine.EventResult && ev.Result.State != engine.StateInterrupted {
			t.Fatalf("the killed sender's session ended %s (%s), want interrupted", ev.Result.State, ev.Result.Err)
		}
	}
	s = startKillSender(t, bin, scfg, addr, "tcp", src)
	if code := s.exitCode(t, 2*time.Minute); code != 0 {
		t.Fatalf("the second sender exit %d (the receiver gave up at the interruption?):\n%s", code, s.stderr.String())
	}
	if code := r.exitCode(t, time.Minute); code != 0 {
		t.Fatalf("receiver exit %d:\n%s", code, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "waiting for ") {
		t.Errorf("the receiver did not say it waits for the rest:\n%s", r.stderr.String())
	}
	sameContent(t, src, filepath.Join(dl, "big.bin"))
}
