package ui

import (
	"testing"
)

// A file from a browser (a receive link) arrives as the engine reports it:
// an offer that asks nothing (active, naming the file), its state, maybe
// progress ticks, its last progress, the file, the result. Its row names
// the file, shows its size and ends with a full bar, and nobody is asked.
func TestBrowserUploadRow(t *testing.T) {
	const size = 300_000
	browser := Peer{Name: "a browser at 192.168.1.23", Addr: "192.168.1.23"}
	ev := func(k TransferEventKind, st State) TransferEvent {
		return TransferEvent{Kind: k, ID: "b1", Delivery: "b1", Direction: Incoming, State: st, Peer: browser}
	}
	offer := ev(TransferOffer, StateActive)
	offer.Offer = &Offer{Count: 1, Files: []FileInfo{{Path: "IMG_0420.jpg", Size: size}}, Total: size, Dest: "/home/u/Downloads", FreeBytes: 1 << 40}
	progress := func(n int64) TransferEvent {
		p := ev(TransferProgress, "")
		p.Progress = &Progress{Bytes: n, Total: size, Files: 0, TotalFiles: 1}
		return p
	}
	last := progress(size)
	last.Progress.Files = 1
	file := ev(TransferFile, "")
	file.File = &FileResult{Path: "IMG_0420.jpg", Size: size, Verified: true}
	result := ev(TransferResult, StateDone)
	result.Result = &Result{State: StateDone, Files: 1, Verified: 1, Bytes: size, Destination: "/home/u/Downloads"}

	const named = "From a browser at 192.168.1.23: IMG_0420.jpg"
	for _, c := range []struct {
		name   string
		events []TransferEvent
		title  string
	}{
		{"landed between two ticks", []TransferEvent{offer, ev(TransferState, StateActive), last, file, result}, named},
		{"with ticks", []TransferEvent{offer, ev(TransferState, StateActive), progress(100_000), progress(200_000), last, file, result}, named},
		{"the last progress dropped", []TransferEvent{offer, ev(TransferState, StateActive), progress(100_000), file, result}, named},
		// An engine that said nothing of the file before its result: the
		// row cannot name it, but a done row is whole.
		{"no offer, no progress", []TransferEvent{ev(TransferState, StateActive), file, result}, "From a browser at 192.168.1.23"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _, _ := newTestUI(t)
			for i, e := range c.events {
				u.ApplyTransfer(e)
				if i == 0 && e.Kind == TransferOffer {
					v := u.transfers.byID["b1"]
					if v.title.Text != named || v.bar.Value != 0 {
						t.Errorf("arriving: title %q, bar %v", v.title.Text, v.bar.Value)
					}
				}
			}
			if len(u.prompts.queue) != 0 {
				t.Errorf("a browser's file was prompted for")
			}
			v := u.transfers.byID["b1"]
			if v.title.Text != c.title {
				t.Errorf("title %q", v.title.Text)
			}
			if v.sub.Text != "1 file · 300.0 kB" || v.bar.Value != 1 {
				t.Errorf("sub %q, bar %v", v.sub.Text, v.bar.Value)
			}
			if v.stateLbl.Text != "Received 1 file · verified" {
				t.Errorf("state %q", v.stateLbl.Text)
			}
		})
	}
}

// A browser's set whose page stopped sending: the engine says so with a
// state (its transfer goes on), and the row says it is interrupted and
// offers Cancel; the page's next bytes make it run again.
func TestBrowserRowInterrupted(t *testing.T) {
	const size = 900_000
	browser := Peer{Name: "a browser at 192.168.1.23", Addr: "192.168.1.23"}
	ev := func(k TransferEventKind, st State) TransferEvent {
		return TransferEvent{Kind: k, ID: "b1", Delivery: "b1", Direction: Incoming, State: st, Peer: browser}
	}
	offer := ev(TransferOffer, StateActive)
	offer.Offer = &Offer{Count: 3, Files: []FileInfo{{Path: "IMG_1.jpg", Size: size / 3}}, Total: size, Dest: "/home/u/Downloads", FreeBytes: 1 << 40}
	progress := func(n int64, st State) TransferEvent {
		p := ev(TransferProgress, st)
		p.Progress = &Progress{Bytes: n, Total: size, Files: 1, TotalFiles: 3}
		return p
	}
	u, _, _ := newTestUI(t)
	for _, e := range []TransferEvent{offer, ev(TransferState, StateActive), progress(500_000, StateActive),
		ev(TransferState, StateInterrupted), progress(500_000, StateInterrupted)} {
		u.ApplyTransfer(e)
	}
	v := u.transfers.byID["b1"]
	if v.stateLbl.Text != "Interrupted — will resume when a browser at 192.168.1.23 is back" {
		t.Errorf("interrupted: state %q", v.stateLbl.Text)
	}
	if !v.cancel.Visible() {
		t.Errorf("interrupted: no Cancel")
	}
	for _, e := range []TransferEvent{ev(TransferState, StateActive), progress(600_000, StateActive)} {
		u.ApplyTransfer(e)
	}
	if v.stateLbl.Text != "Receiving 3 files" {
		t.Errorf("sending again: state %q", v.stateLbl.Text)
	}
}
