package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// The --to names of a send are looked up at once, not one after another
// (each name nobody answered to cost a discovery window of its own): every
// lookup has begun before any ends, and the results keep the order of the
// --to given.
func TestSeveralNamesResolveAtOnce(t *testing.T) {
	tos := []string{"Alpha", "Nobody", "Delta", "Echo"}
	var mu sync.Mutex
	started := 0
	all := make(chan struct{})
	got := resolveEach(tos, func(to string) resolved {
		mu.Lock()
		if started++; started == len(tos) {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(time.Minute): // a guard against hanging, not a measure
			return resolved{err: fmt.Errorf("%s was looked up alone", to)}
		}
		return resolved{target: engine.Target{ID: to}, said: to + "\n"}
	})
	for i, r := range got {
		if r.err != nil || r.target.ID != tos[i] || r.said != tos[i]+"\n" {
			t.Errorf("result %d: %v, %+v, want %s's", i, r.err, r.target, tos[i])
		}
	}
}

// Names not found among several --to are said in the order given, each
// once, and the others are sent to.
func TestSendSeveralNamesNotFoundInOrder(t *testing.T) {
	a := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	src := writeFile(t, "group.txt", "for everyone\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--retry-for", "0", "--transport", "tcp",
		"--to", "Gone Laptop", "--to", a.tcp, "--to", "Gone Phone", src)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := []string{`ferry-cli send: Gone Laptop: no device called "Gone Laptop"`, `ferry-cli send: Gone Phone: no device called "Gone Phone"`,
		"ferry-cli send: 2 of 3 recipients did not receive everything: Gone Laptop, Gone Phone"}
	if code != 1 || len(lines) != len(want) {
		t.Fatalf("send exit %d, stderr:\n%s", code, stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("stderr line %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
	if !strings.Contains(stdout, "["+a.tcp+"] done") {
		t.Errorf("no done line for %s in:\n%s", a.tcp, stdout)
	}
}

// A --to that is a mistake (a port out of range) ends the send at once:
// the names beside it are not looked up first.
func TestMistakenAddressLooksUpNoName(t *testing.T) {
	got := resolveAllByDiscovery(t.Context(), []string{"Nobody", "127.0.0.1:99999"}, t.TempDir(), false)
	for i, r := range got {
		if !errors.Is(r.err, errUsage) {
			t.Errorf("result %d: %v, want the usage error", i, r.err)
		}
	}
}
