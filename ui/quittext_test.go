package ui

import (
	"testing"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// Quitting during a send said "what has arrived is kept", which is the
// receiver's side of it; the app now keeps its unfinished sends and sends
// the rest when it starts again, and the question says so.
func TestQuitTextSaysSendsGoOn(t *testing.T) {
	send := &transfer.Delivery{Direction: transfer.Outgoing, Peer: "Bob"}
	recv := &transfer.Delivery{Direction: transfer.Incoming, Peer: "Alice"}
	for _, c := range []struct {
		running []*transfer.Delivery
		want    string
	}{
		{[]*transfer.Delivery{send}, "A transfer is in progress: sending to Bob. Quitting stops it; Ferry sends the rest when it starts again."},
		{[]*transfer.Delivery{recv}, "A transfer is in progress: receiving from Alice. Quitting stops it; what has arrived is kept."},
		{[]*transfer.Delivery{send, send}, "2 transfers are in progress. Quitting stops them; Ferry sends the rest when it starts again."},
		{[]*transfer.Delivery{recv, recv}, "2 transfers are in progress. Quitting stops them; what has arrived is kept."},
		{[]*transfer.Delivery{send, recv}, "2 transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of its sends when it starts again."},
	} {
		if got := quitCutsText(c.running); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
