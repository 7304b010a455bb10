package engine

import (
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/peer"
)

// Pairing settles a rendezvous secret on both devices, the same one; a
// pairing the users did not confirm settles none.
func TestRendezvousAtPairing(t *testing.T) {
	for _, confirm := range []bool{true, false} {
		recv := startReceiver(t, Options{Accept: AcceptAsk})
		a := testEngine(t, Options{})
		rxEvents, unsub := recv.Subscribe(256)
		defer unsub()
		txEvents, unsub2 := a.Subscribe(256)
		defer unsub2()
		tr, err := a.Pair(t.Context(), target(recv))
		if err != nil {
			t.Fatal(err)
		}
		txPair := firstEvent(t, txEvents, EventPair)
		rxPair := firstEvent(t, rxEvents, EventPair)
		if err := recv.ConfirmPair(rxPair.TransferID, confirm); err != nil {
			t.Fatal(err)
		}
		if err := a.ConfirmPair(txPair.TransferID, confirm); err != nil {
			t.Fatal(err)
		}
		<-tr.Done()
		firstEvent(t, rxEvents, EventResult)
		onA, onRecv := a.rendezvousOf(peerOf(t, recv)), recv.rendezvousOf(peerOf(t, a))
		if confirm && (onA.IsZero() || onA != onRecv) {
			t.Errorf("paired: the dialer holds %q, the listener %q; want one secret", onA.Fingerprint(), onRecv.Fingerprint())
		}
		if !confirm && (!onA.IsZero() || !onRecv.IsZero()) {
			t.Errorf("not paired, yet the dialer holds %q and the listener %q", onA.Fingerprint(), onRecv.Fingerprint())
		}
	}
}

func peerOf(t *testing.T, e *Engine) peer.ID {
	t.Helper()
	id, err := peer.Parse(e.ID())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// settleRendezvous: a paired device adopts a session's secret exactly when
// the two hellos' fingerprints do not name one secret; a device that is
// not paired never gets one.
func TestSettleRendezvous(t *testing.T) {
	e := testEngine(t, Options{})
	other := testEngine(t, Options{})
	id := peerOf(t, other)
	s1, s2 := rendezvous.Secret{1}, rendezvous.Secret{2}

	e.settleRendezvous(id, "", "", s1)
	if !e.rendezvousOf(id).IsZero() {
		t.Fatal("an unknown device got a secret")
	}
	if err := e.trust.Seen(id, "other", ""); err != nil {
		t.Fatal(err)
	}
	e.settleRendezvous(id, "", "", s1)
	if !e.rendezvousOf(id).IsZero() {
		t.Fatal("a device seen but not paired got a secret")
	}
	if err := e.trust.Pair(id, "other", "", e.now()); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name         string
		ours, theirs string
		offered      rendezvous.Secret
		want         rendezvous.Secret
	}{
		{"paired before: neither holds one", "", "", s1, s1},
		{"both hold the same", s1.Fingerprint(), s1.Fingerprint(), s2, s1},
		{"the peer lost it", s1.Fingerprint(), "", s2, s2},
		{"the peer holds another", s2.Fingerprint(), s1.Fingerprint(), s1, s1},
	}
	for _, st := range steps {
		e.settleRendezvous(id, st.ours, st.theirs, st.offered)
		if got := e.rendezvousOf(id); got != st.want {
			t.Fatalf("%s: holds %q, want %q", st.name, got.Fingerprint(), st.want.Fingerprint())
		}
	}
}
