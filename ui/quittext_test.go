package ui

import (
	"testing"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// Quitting during a send said "what has arrived is kept", which is the
// receiver's side of it; the app now keeps its unfinished sends and sends
// the rest when it starts again, and the question says so.
// A send the app does not keep (to a LocalSend phone, to a bare address)
// is promised nothing.
func TestQuitTextSaysSendsGoOn(t *testing.T) {
	send := &transfer.Delivery{ID: "kept", Direction: transfer.Outgoing, Peer: "Bob"}
	phone := &transfer.Delivery{ID: "phone", Direction: transfer.Outgoing, Peer: "Pixel"}
	recv := &transfer.Delivery{ID: "in", Direction: transfer.Incoming, Peer: "Alice"}
	kept := func(id string) bool { return id == "kept" }
	for _, c := range []struct {
		running []*transfer.Delivery
		want    string
	}{
		{[]*transfer.Delivery{send}, "A transfer is in progress: sending to Bob. Quitting stops it; Ferry sends the rest when it starts again."},
		{[]*transfer.Delivery{recv}, "A transfer is in progress: receiving from Alice. Quitting stops it; what has arrived is kept."},
		{[]*transfer.Delivery{send, send}, "2 transfers are in progress. Quitting stops them; Ferry sends the rest when it starts again."},
		{[]*transfer.Delivery{recv, recv}, "2 transfers are in progress. Quitting stops them; what has arrived is kept."},
		{[]*transfer.Delivery{send, recv}, "2 transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of one send when it starts again."},
		{[]*transfer.Delivery{send, send, phone}, "3 transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of 2 sends when it starts again."},
		{[]*transfer.Delivery{phone}, "A transfer is in progress: sending to Pixel. Quitting stops it; what has arrived is kept."},
		{[]*transfer.Delivery{phone, send}, "2 transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of one send when it starts again."},
	} {
		if got := quitCutsText(c.running, kept); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
