package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
)

func TestFileReportsFirst(t *testing.T) {
	var r fileReports
	steps := []struct {
		idx  int
		ok   bool
		want bool
	}{
		{0, true, true}, {0, true, false}, // reported again: not told twice
		{0, false, true}, {0, false, false}, // another outcome is news, once
		{63, true, true}, {64, true, true}, {64, true, false}, // word edges
		{1000, false, true}, {1000, true, true}, {999, true, true},
		{-1, true, true}, {-1, true, true}, // no index: always told
	}
	for i, s := range steps {
		if got := r.first(s.idx, s.ok); got != s.want {
			t.Errorf("step %d: first(%d, %v) = %v, want %v", i, s.idx, s.ok, got, s.want)
		}
	}
}

// A transfer paused after some of its files were saved, and resumed,
// reports each file once on both sides (EventFile), where the resumed
// session reported the saved ones again: the app's row, which counts the
// events, said "Received 20,539 files" of 20,000 after such a second
// session.
func TestResumedTransferReportsEachFileOnce(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{ProgressInterval: 2 * time.Millisecond})
	src := filepath.Join(t.TempDir(), "tree")
	const small = 40
	for i := range small {
		writeFileIn(t, filepath.Join(src, "a", fmt.Sprintf("f%03d.txt", i)), 1000+i)
	}
	const size = 96 << 20
	writeFileIn(t, filepath.Join(src, "z", "big.bin"), size)
	sent, unsubS := send.Subscribe(8192)
	defer unsubS()
	got, unsubR := recv.Subscribe(8192)
	defer unsubR()
	watch, unsubW := recv.Subscribe(8192)
	defer unsubW()
	tr, err := send.Send(context.Background(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	// Paused once the receiver saved some small files, before the big one.
	for n, timeout := 0, time.After(time.Minute); n < small/2; {
		select {
		case ev := <-watch:
			if ev.Kind == EventFile && ev.File.Verified {
				n++
			}
			if ev.Kind == EventResult && ev.Result.State == StateDone {
				t.Fatal("the transfer ended before the pause")
			}
		case <-timeout:
			t.Fatal("no files saved")
		}
	}
	if err := send.Pause(tr.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the sender to wait for Resume", func() bool { return send.Resume(tr.ID()) == nil })
	<-tr.Done()
	if res := tr.Result(); res.State != StateDone || res.Verified != small+1 {
		t.Fatalf("sender: %s %q, %d verified", res.State, res.Err, res.Verified)
	}
	for _, side := range []struct {
		name   string
		events <-chan Event
	}{{"sender", sent}, {"receiver", got}} {
		reports := map[string]int{}
		sessions := 0
		for done := false; !done; {
			select {
			case ev := <-side.events:
				switch {
				case ev.Kind == EventFile:
					reports[ev.File.Path]++
				case ev.Kind == EventState && ev.State == StateActive:
					sessions++
				case ev.Kind == EventResult && ev.Result.State == StateDone:
					done = true
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: no result", side.name)
			}
		}
		if sessions < 2 {
			t.Fatalf("%s: %d sessions active, want the first and the resumed one", side.name, sessions)
		}
		if len(reports) != small+1 {
			t.Errorf("%s reported %d files, want %d", side.name, len(reports), small+1)
		}
		for p, n := range reports {
			if n != 1 {
				t.Errorf("%s reported %s %d times", side.name, p, n)
			}
		}
	}
}

func writeFileIn(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, size)
}
