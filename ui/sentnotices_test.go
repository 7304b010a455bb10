package ui

import (
	"testing"
	"time"
)

// Sending to three devices at once gave three "Files sent" notifications
// (seen on screen): sends that end while others are under way are told in
// one, once the last ends; a send that ends alone is told at once, and
// one that others keep waiting is told after Options.SentTogether.
func TestFilesSentToSeveralDevicesAreOneNotification(t *testing.T) {
	u, _, c := newTestUI(t)
	type note struct{ title, body string }
	var got []note
	u.opt.Notify = func(title, body string) { got = append(got, note{title, body}) }
	start := func(id, name string) {
		u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: id, Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: id, Name: name},
			Offer: &Offer{Files: []FileInfo{{Path: "a.jpg", Size: 1000}, {Path: "b.jpg", Size: 1000}}, Total: 2000}})
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive})
	}
	end := func(id, name string, state State) {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, Peer: Peer{ID: id, Name: name},
			Result: &Result{State: state, Files: 2, Verified: 2, Bytes: 2000}})
	}

	start("a", "Alice")
	start("b", "Bob")
	start("c", "Carol")
	end("a", "Alice", StateDone)
	c.t = c.t.Add(300 * time.Millisecond)
	u.flushNotices(c.t) // Run's tick
	end("b", "Bob", StateDone)
	if len(got) != 0 {
		t.Fatalf("told before the last send ended: %+v", got)
	}
	c.t = c.t.Add(300 * time.Millisecond)
	end("c", "Carol", StateDone)
	if len(got) != 1 || got[0] != (note{"Files sent to Alice, Bob and Carol", "Sent 2 files (2.0 kB) to each."}) {
		t.Fatalf("three sends at once: %+v", got)
	}

	// Alone, at once, as before.
	got = nil
	start("d", "Dave")
	end("d", "Dave", StateDone)
	if len(got) != 1 || got[0] != (note{"Files sent", "Sent 2 files (2.0 kB) to Dave."}) {
		t.Fatalf("one send: %+v", got)
	}

	// A send that goes on keeps the ended one waiting no longer than SentTogether.
	got = nil
	start("e", "Eve")
	start("f", "Frank")
	end("e", "Eve", StateDone)
	c.t = c.t.Add(u.opt.SentTogether - time.Millisecond)
	u.flushNotices(c.t)
	if len(got) != 0 {
		t.Fatalf("told before SentTogether: %+v", got)
	}
	c.t = c.t.Add(time.Millisecond)
	u.flushNotices(c.t)
	if len(got) != 1 || got[0] != (note{"Files sent", "Sent 2 files (2.0 kB) to Eve."}) {
		t.Fatalf("a send that goes on: %+v", got)
	}
	// The other one failing is told on its own; nothing is held.
	got = nil
	end("f", "Frank", StateFailed)
	c.t = c.t.Add(time.Hour)
	u.flushNotices(c.t)
	if len(got) != 1 || got[0].title != "Transfer failed" {
		t.Fatalf("the other one failed: %+v", got)
	}
}
