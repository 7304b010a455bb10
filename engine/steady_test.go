package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// A receiver left running holds no more after many transfers than after
// its first few: its goroutines and open files come back to where they
// were, and nothing of the transfers stays in its config folder or as a
// partial file, interrupted ones included once they resumed. The check at
// the package's end (testutil.Main) counts goroutines only once every
// engine closed, so a goroutine or a file each transfer left until Close
// passed it, while a receiver runs for weeks (the soak with real processes
// and its figures: docs/benchmarks/soak.md).
func TestManyTransfersLeaveTheReceiverAsItWas(t *testing.T) {
	if testing.Short() {
		t.Skip("many transfers")
	}
	recv, srv, lsAddr := lsEngine(t, Options{}, LocalSendOptions{})
	send := testEngine(t, Options{})
	ls := LocalSendTarget{Addr: lsAddr, Fingerprint: srv.Fingerprint()}
	src := t.TempDir()
	small, folder, big := filepath.Join(src, "small.bin"), filepath.Join(src, "folder"), filepath.Join(src, "big.bin")
	writeFile(t, small, 20_000)
	writeFile(t, filepath.Join(folder, "a.txt"), 1000)
	writeFile(t, filepath.Join(folder, "sub", "b.bin"), 70_000)
	writeFile(t, big, 48<<20)
	// Each kind of transfer; each saves under a new name ("small (1).bin"):
	// the download folder grows, nothing else may.
	kinds := []func() Result{
		func() Result { return sendWait(t, send, target(recv), []string{small}, SendOptions{Transport: "tcp"}) },
		func() Result { return sendWait(t, send, target(recv), []string{small}, SendOptions{Transport: "quic"}) },
		func() Result {
			return sendWait(t, send, target(recv), []string{folder}, SendOptions{Transport: "auto"})
		},
		func() Result { _, r := sendItemsWait(t, send, target(recv), Items{Text: "a note"}); return r },
		func() Result {
			_, r := lsSendWait(t, send, ls, Items{Paths: []string{small}}, LocalSendSendOptions{})
			return r
		},
	}
	interrupted := func(tp string) {
		interrupt(t, send, recv, []string{big}, tp, 48<<20)
		if r := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: tp}); r.State != StateDone {
			t.Fatalf("resumed over %s: %s %q", tp, r.State, r.Err)
		}
	}
	rounds := func(n int) {
		for i := range n {
			if r := kinds[i%len(kinds)](); r.State != StateDone {
				t.Fatalf("transfer %d: %s %q", i, r.State, r.Err)
			}
		}
	}
	rounds(2 * len(kinds))
	interrupted("quic")
	goroutines, fds := runtime.NumGoroutine(), openFiles()
	const many = 30 // of each kind
	rounds(many * len(kinds))
	interrupted("tcp")
	interrupted("quic")
	// A few left over from the last transfers' ends are let through;
	// one for each transfer, or for each of a kind, is not.
	const slack = 8
	testutil.WaitFor(t, "the goroutines back where they were", func() bool { return runtime.NumGoroutine() <= goroutines+slack })
	if fds >= 0 {
		testutil.WaitFor(t, "the open files back where they were", func() bool { return openFiles() <= fds+slack })
	}
	if p := recv.Partials(); len(p) != 0 {
		t.Errorf("unfinished transfers kept: %+v", p)
	}
	noPartials(t, recv.DownloadDir())
	for _, dir := range []string{recv.resume.Path(), send.resume.Path()} {
		// Finished deliveries are kept a day, at most 16 of one device
		// (a snapshot and a journal each): the sender is one device here.
		var kept, other []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if filepath.Base(filepath.Dir(p)) == "delivered" {
					kept = append(kept, p)
				} else {
					other = append(other, p)
				}
			}
			return nil
		})
		if len(other) != 0 || len(kept) > 2*16 {
			t.Errorf("%s holds %d files and %d of finished deliveries after every transfer finished: %v", dir, len(other), len(kept), other)
		}
	}
}

// openFiles counts this process's open file descriptors, or is -1 where
// the system does not list them (/proc/self/fd).
func openFiles() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}
