package ui

import (
	"context"
	"fmt"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/ferrydrop/ferry/internal/uiloop"
)

// treeStream is what the engine reports of an incoming transfer of n files
// in n/100 top-level folders, as the app hands it to Run: the offer
// (the engine lists the first 1000 files, and every top-level folder),
// then every file, progress and metrics, a state event every flush files
// (standing in for Run's tick), and the result.
func treeStream(id string, n, flush int) []TransferEvent {
	peer := Peer{ID: idAlice, Name: "Alice"}
	o := &Offer{Count: n, Total: int64(n) * 10, Dest: "/tmp/in", FreeBytes: 1 << 40}
	name := func(i int) string { return fmt.Sprintf("d%d/photo-%d.jpg", i/100, i) }
	for i := range min(n, 1000) {
		o.Files = append(o.Files, FileInfo{Path: name(i), Size: 10})
	}
	for d := range n / 100 {
		o.Folders = append(o.Folders, FolderInfo{Path: fmt.Sprintf("d%d", d), Files: 100, Bytes: 1000})
	}
	evs := []TransferEvent{
		{Kind: TransferOffer, ID: id, Direction: Incoming, Peer: peer, State: StateWaiting, Offer: o},
		{Kind: TransferState, ID: id, Direction: Incoming, Peer: peer, State: StateActive},
	}
	for i := range n {
		evs = append(evs, TransferEvent{Kind: TransferFile, ID: id, Direction: Incoming, State: StateActive,
			File: &FileResult{Path: name(i), Size: 10, Verified: true}})
		if (i+1)%flush == 0 {
			evs = append(evs,
				TransferEvent{Kind: TransferProgress, ID: id, Direction: Incoming, State: StateActive,
					Progress: &Progress{Bytes: int64(i+1) * 10, Total: int64(n) * 10, Files: i + 1, TotalFiles: n}},
				TransferEvent{Kind: TransferMetrics, ID: id, Direction: Incoming, State: StateActive, Metrics: &Metrics{Transport: "tcp"}},
				TransferEvent{Kind: TransferState, ID: id, Direction: Incoming, State: StateActive})
		}
	}
	return append(evs, TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, Peer: peer, State: StateDone,
		Result: &Result{State: StateDone, Files: n, Verified: n, Bytes: int64(n) * 10, Destination: "/tmp/in"}})
}

// runStream makes a UI over be in a test window and runs evs through its
// Run, which hands the updates to opt.Do; it returns once Run has asked for
// the update of the last event.
func runStream(t testing.TB, be Backend, opt Options, evs []TransferEvent) *UI {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, opt)
	ctx, cancel := context.WithCancel(context.Background())
	tr := make(chan TransferEvent)
	done := make(chan error)
	go func() { done <- u.Run(ctx, nil, tr) }()
	for _, ev := range evs {
		tr <- ev
	}
	// One more event through Run: the last one's update has been asked for.
	tr <- TransferEvent{Kind: TransferState, ID: "other", Direction: Outgoing, State: StateConnecting}
	cancel()
	<-done
	return u
}

// BenchmarkUIStall reports the longest stall of the UI goroutine while an
// offer of n files arrives, is answered, and its files and progress run
// (issue 30): the stream of treeStream through Run, the updates run on one
// goroutine as Fyne's driver runs them, the widgets those of Fyne's test
// driver (no drawing). cpu-ms is the CPU time of the costliest update (the
// thread's own, so another process's load does not count), stall-ms the
// wall time of the longest one and wait-ms the longest an update waited in
// the queue: on a loaded machine read cpu-ms. TestUIUpdatesAreBounded
// counts the allocations of each update.
//
//	go test -run '^$' -bench UIStall -benchtime 3x ./ui/
func BenchmarkUIStall(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			evs := treeStream("t", n, n+1) // no state events: Run's tick flushes
			var stall, cpu, wait time.Duration
			updates := 0
			for range b.N {
				loop := uiloop.New()
				stop := make(chan struct{})
				go loop.Run(stop)
				runStream(b, newFake(), Options{Refresh: 50 * time.Millisecond, Do: loop.Do}, evs)
				close(stop)
				<-loop.Done()
				st := loop.Stats()
				stall, wait, cpu = max(stall, st.MaxStall), max(wait, st.MaxWait), max(cpu, st.MaxCPU)
				updates += st.Updates
			}
			b.ReportMetric(float64(stall)/float64(time.Millisecond), "stall-ms")
			b.ReportMetric(float64(wait)/float64(time.Millisecond), "wait-ms")
			b.ReportMetric(float64(cpu)/float64(time.Millisecond), "cpu-ms")
			b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
		})
	}
}
