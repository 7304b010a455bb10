package ui

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// An offer whose time ran out was told ("Offer expired") only when this
// UI's tick declined it; the engine's clock runs out at the same moment
// and its result often came first, which took the prompt down without a
// word: the one on screen vanished, and one held behind it went unseen
// and untold. Either way the user is told now, and an offer never shown
// is told as missed, with who to ask for it again.
func TestExpiredOfferIsToldWhoeverNoticedFirst(t *testing.T) {
	u, be, c := newTestUI(t)
	var told []string
	u.opt.Notify = func(title, body string) { told = append(told, title+": "+body) }
	expired := func(id string) TransferEvent {
		return TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, State: StateDeclined, Peer: Peer{ID: idAlice, Name: "Alice"},
			Result: &Result{State: StateDeclined, Code: CodeExpired, Err: "Expired: not answered in time."}}
	}
	take := func() []string { t.Helper(); out := told; told = nil; return out }

	// The engine's result first: the held offer, then the one shown.
	u.ApplyTransfer(offerEvent("t1", 1))
	u.ApplyTransfer(offerEvent("t2", 1))
	take()
	u.ApplyTransfer(expired("t2"))
	if got := take(); len(got) != 1 || !strings.HasPrefix(got[0], "Missed offer: Alice offered 1 file (1.0 kB) while another offer was on screen") ||
		!strings.Contains(got[0], "Ask Alice to send it again.") {
		t.Fatalf("the held offer expired in the engine: told %q", got)
	}
	u.ApplyTransfer(expired("t1"))
	if got := take(); len(got) != 1 || !strings.HasPrefix(got[0], "Offer expired: The offer from Alice was declined") {
		t.Fatalf("the offer on screen expired in the engine: told %q", got)
	}

	// This UI's tick first: both go, the held one never shown, each told
	// once (the engine's results that follow say nothing more).
	u.ApplyTransfer(offerEvent("t3", 1))
	u.ApplyTransfer(offerEvent("t4", 2))
	take()
	u.ExpirePrompts(c.t.Add(3 * time.Minute))
	u.ApplyTransfer(expired("t3"))
	u.ApplyTransfer(expired("t4"))
	got := take()
	if len(got) != 2 || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "Missed offer: Alice offered 2 files (2.0 kB)") }) ||
		!slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "Offer expired: The offer from Alice") }) {
		t.Fatalf("expired at the tick: told %q", got)
	}
	if slices.Contains(be.onScreen, "t4 shown") {
		t.Fatalf("the held offer was shown as it expired: %v", be.onScreen)
	}
}
