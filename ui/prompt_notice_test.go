package ui

import "testing"

// Issue 26, finding 6: an "Incoming files" notification is taken down once
// the offer is answered in the window (or withdrawn by its sender).
func TestAnsweredOfferClosesItsNotification(t *testing.T) {
	u, _, _ := newTestUI(t)
	shown := map[string]string{}
	var closed []string
	u.opt.NotifyTagged = func(tag, title, _ string, _ []NoticeAction) { shown[tag] = title }
	u.opt.CloseNotice = func(tag string) { closed = append(closed, tag) }
	u.ApplyTransfer(offerEvent("r1", 2))
	u.ApplyTransfer(offerEvent("r2", 1))
	if shown["r1"] != "Incoming files" || shown["r2"] != "Incoming files" {
		t.Fatalf("tagged notifications: %v", shown)
	}
	u.prompts.answer(u.prompts.queue[0], Decision{Accept: true})
	if len(closed) != 1 || closed[0] != "r1" {
		t.Fatalf("after answering r1: closed %v", closed)
	}
	// The sender withdraws r2.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r2", Direction: Incoming, Result: &Result{State: StateCancelled, ByPeer: true}})
	if len(closed) != 2 || closed[1] != "r2" {
		t.Fatalf("after the sender withdrew r2: closed %v", closed)
	}
}
