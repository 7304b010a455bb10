package ui

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 30: the app's prompt and transfer row stay responsive while an
// offer of 10^5 files arrives and runs. Run does what grows with the number
// of files off the Fyne goroutine (feed.go); each update of the widgets does
// bounded work. The work is counted (heap allocations per update: every
// label set, row built and file listed allocates), never timed.

// uiBackend is the fake backend that notes a call which reads the disk
// (Partials) made from inside an update of the widgets.
type uiBackend struct {
	*fakeBackend
	mu           sync.Mutex
	inUI         bool
	partialsInUI int
}

func (b *uiBackend) Partials() []PartialTransfer {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUI {
		b.partialsInUI++
	}
	return b.fakeBackend.Partials()
}

// uiWork is what the updates of one stream cost the Fyne goroutine.
type uiWork struct {
	updates     int    // calls of Options.Do
	maxAllocs   uint64 // heap allocations of the costliest update
	maxAt       int    // which update that was
	allocs      uint64 // in all
	rows        int    // results a row keeps
	treeNodes   int    // nodes of the offer's prompt tree
	detailLines int    // lines of the open Details dialog
	partialsUI  int    // backend disk reads inside updates
}

// measureStream runs evs through Run and then each update Run asked for on
// this goroutine (the Fyne test driver's), counting its heap allocations.
// Details of the transfer are open from its first update on.
func measureStream(t testing.TB, evs []TransferEvent) uiWork {
	be := &uiBackend{fakeBackend: newFake()}
	var mu sync.Mutex
	var fns []func()
	u := runStream(t, be, Options{Refresh: time.Hour,
		Do: func(f func()) { mu.Lock(); fns = append(fns, f); mu.Unlock() }}, evs)

	mu.Lock()
	defer mu.Unlock()
	var work uiWork
	work.updates = len(fns)
	if limit := len(evs)/100 + 100; len(fns) > limit {
		// Checked before running them: run one by one, an update per file
		// would take minutes on a quadratic row.
		t.Fatalf("%d events made %d updates of the widgets (at most %d: file events are folded)", len(evs), len(fns), limit)
	}
	var ms runtime.MemStats
	id := evs[0].ID
	for i, f := range fns {
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		be.mu.Lock()
		be.inUI = true
		be.mu.Unlock()
		f()
		be.mu.Lock()
		be.inUI = false
		be.mu.Unlock()
		runtime.ReadMemStats(&ms)
		n := ms.Mallocs - before
		work.allocs += n
		if n > work.maxAllocs {
			work.maxAllocs, work.maxAt = n, i
		}
		if len(u.prompts.queue) > 0 && u.prompts.queue[0].tree != nil {
			nodes := 0
			for _, c := range u.prompts.queue[0].tree.children {
				nodes += len(c)
			}
			work.treeNodes = max(work.treeNodes, nodes)
		}
		if v := u.transfers.byID[id]; v != nil {
			work.rows = max(work.rows, len(v.results))
			if u.transfers.detailFiles != nil {
				work.detailLines = max(work.detailLines, len(splitLines(u.transfers.detailFiles.Text)))
			}
		}
		if work.rows > maxBatchFiles || work.detailLines > maxBatchFiles+maxBatchFailures || work.treeNodes > maxOfferFiles+maxOfferFolders+2 {
			// Checked after each update: the next ones would take minutes.
			t.Fatalf("after update %d, what the widgets keep grew: a row %d results, Details %d lines, the prompt's tree %d nodes",
				i, work.rows, work.detailLines, work.treeNodes)
		}
		if u.transfers.detail == nil && u.transfers.byID[id] != nil {
			u.transfers.showDetails(id)
		}
	}
	work.partialsUI = be.partialsInUI
	return work
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestUIUpdatesAreBounded(t *testing.T) {
	small := measureStream(t, treeStream("t", 1_000, 1000))
	large := measureStream(t, treeStream("t", 100_000, 1000))
	t.Logf("1,000 files: %d updates, at most %d allocations in one (update %d), %d in all; row keeps %d, tree %d nodes, details %d lines",
		small.updates, small.maxAllocs, small.maxAt, small.allocs, small.rows, small.treeNodes, small.detailLines)
	t.Logf("100,000 files: %d updates, at most %d allocations in one (update %d), %d in all; row keeps %d, tree %d nodes, details %d lines",
		large.updates, large.maxAllocs, large.maxAt, large.allocs, large.rows, large.treeNodes, large.detailLines)

	// The costliest update (building the prompt) costs the same for 10^5
	// files as for 10^3: the offer lists as many files, and the folders
	// past maxOfferFolders are summed up off the Fyne goroutine.
	if large.maxAllocs > small.maxAllocs*3/2+2000 {
		t.Errorf("the costliest update grew with the files: %d allocations for 100,000 files, %d for 1,000", large.maxAllocs, small.maxAllocs)
	}
	// Per update, the stream of a large transfer is no costlier than a
	// small one's: 100 times the files, about 100 times the updates, each
	// of them as costly.
	// (The costliest, the prompt's, left out: it is checked above.)
	perSmall := (small.allocs - small.maxAllocs) / uint64(small.updates-1)
	perLarge := (large.allocs - large.maxAllocs) / uint64(large.updates-1)
	if perLarge > perSmall*2+2000 {
		t.Errorf("updates cost more with more files: %d allocations each for 100,000 files, %d for 1,000", perLarge, perSmall)
	}
	for _, w := range []uiWork{small, large} {
		if w.partialsUI > 0 {
			t.Errorf("the partial files were read from the disk %d times inside an update of the widgets", w.partialsUI)
		}
	}
}

// TestDetailsCountTheFilesNotListed: a row lists its first files in
// Details and counts the others in one line; a failed file past the first
// is listed, first, wherever it came (a tree's one unreadable file was only
// counted).
func TestDetailsCountTheFilesNotListed(t *testing.T) {
	u, _, _ := newTestUI(t)
	evs := treeStream("t", maxBatchFiles+3, maxBatchFiles+4)
	evs[len(evs)-2].File.Verified, evs[len(evs)-2].File.Err = false, "disk full"
	for _, ev := range evs[:len(evs)-1] {
		u.ApplyTransfer(ev)
	}
	u.transfers.showDetails("t")
	if got, want := u.transfers.detailMore.Text, "and 2 more files (of all 103: 102 verified, 1 failed)"; got != want {
		t.Errorf("Details say %q, want %q", got, want)
	}
	lines := splitLines(u.transfers.detailFiles.Text)
	if len(lines) != maxBatchFiles+1 || !strings.HasPrefix(lines[0], "✗ d1/photo-") || !strings.HasSuffix(lines[0], ": disk full") {
		t.Errorf("Details list %d files, the first %q; want the failed one, then the first %d", len(lines), lines[0], maxBatchFiles)
	}
}

// A row names at most maxBatchFailures failed files past its first: a
// transfer of 10^5 failures keeps no list that grows with them.
func TestFailuresListedAreBounded(t *testing.T) {
	u, _, _ := newTestUI(t)
	evs := treeStream("t", 1000, 1000)
	for _, ev := range evs {
		if ev.File != nil {
			ev.File.Verified, ev.File.Err = false, "gone"
		}
	}
	for _, ev := range evs {
		u.ApplyTransfer(ev)
	}
	v := u.transfers.byID["t"]
	if len(v.results) != maxBatchFiles || len(v.failures) != maxBatchFailures {
		t.Errorf("a row keeps %d files and %d failures, want %d and %d", len(v.results), len(v.failures), maxBatchFiles, maxBatchFailures)
	}
}
