package engine

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"

	"github.com/ferrydrop/ferry/engine/addr"
)

// sendItemsWait sends items and waits for the result.
func sendItemsWait(t *testing.T, s *Engine, to Target, items Items) (*Transfer, Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := s.SendItems(ctx, to, items, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-ctx.Done():
		t.Fatal("transfer did not finish")
	}
	return tr, tr.Result()
}

// answerOffers decides every offer recv raises with decide, and hands the
// offers over.
func answerOffers(t *testing.T, recv *Engine, decide func(*OfferInfo) Decision) <-chan *OfferInfo {
	t.Helper()
	events, unsub := recv.Subscribe(256)
	t.Cleanup(unsub)
	offers := make(chan *OfferInfo, 16)
	go func() {
		for ev := range events {
			if ev.Kind == EventOffer && ev.Direction == Receiving {
				offers <- ev.Offer
				if err := recv.Decide(ev.TransferID, decide(ev.Offer)); err != nil {
					t.Errorf("decide: %v", err)
				}
			}
		}
	}()
	return offers
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("%s holds %d entries; a text must not be written to disk", dir, len(ents))
	}
}

// A text item travels with the offer: the prompt shows it exactly as sent
// (escaping is the viewer's: safetext.Text), accepting it writes nothing to
// disk, and both sides' results carry it.
func TestTextOffer(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	offers := answerOffers(t, recv, func(*OfferInfo) Decision { return Decision{Accept: true} })
	got := receivedResult(t, recv)
	text := "see https://example.org/a?b=c\nand this: photo\u202egpj.exe\r\n\tend ✈"
	sevents, unsub := send.Subscribe(64)
	defer unsub()
	_, res := sendItemsWait(t, send, target(recv), Items{Text: text})
	if res.State != StateDone || res.Text != text || res.Files != 0 {
		t.Fatalf("sender's result %+v, want done with the text", res)
	}
	o := <-offers
	if o.Text != text || o.Count != 0 || len(o.Files) != 0 || o.TotalBytes != 0 {
		t.Fatalf("offer %+v, want the exact text and no files", o)
	}
	if r := <-got; r.State != StateDone || r.Text != text {
		t.Fatalf("receiver's result %+v, want done with the text", r)
	}
	emptyDir(t, recv.DownloadDir())
	// The sending side announced what it offers, text included.
	var announced *OfferInfo
	for len(sevents) > 0 {
		if ev := <-sevents; ev.Kind == EventOffer {
			announced = ev.Offer
		}
	}
	if announced == nil || announced.Text != text || announced.Count != 0 {
		t.Fatalf("the sender's offer event %+v", announced)
	}
}

// A text and files in one offer: the prompt lists both, the files land,
// the text is in the results.
func TestTextWithFiles(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	offers := answerOffers(t, recv, func(*OfferInfo) Decision { return Decision{Accept: true} })
	src := t.TempDir()
	p := filepath.Join(src, "a.txt")
	writeFile(t, p, 1000)
	_, res := sendItemsWait(t, send, target(recv), Items{Paths: []string{p}, Text: "the file I told you about"})
	if res.State != StateDone || res.Files != 1 || res.Verified != 1 || res.Text != "the file I told you about" {
		t.Fatalf("result %+v", res)
	}
	if o := <-offers; o.Count != 1 || o.Text != "the file I told you about" {
		t.Fatalf("offer %+v", o)
	}
	if _, err := os.Stat(filepath.Join(recv.DownloadDir(), "a.txt")); err != nil {
		t.Fatal(err)
	}
}

// A declined text is in neither result: nobody received it.
func TestTextDeclined(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	answerOffers(t, recv, func(*OfferInfo) Decision { return Decision{Reason: "not now"} })
	got := receivedResult(t, recv)
	_, res := sendItemsWait(t, send, target(recv), Items{Text: "secret"})
	if res.State != StateDeclined || res.Text != "" {
		t.Fatalf("sender's result %+v, want declined without the text", res)
	}
	if r := <-got; r.State != StateDeclined || r.Text != "" {
		t.Fatalf("receiver's result %+v, want declined without the text", r)
	}
}

// The text's bound is in bytes, on the sending side before anything is
// dialled, and on the receiving side whatever protocol carried it.
func TestTextLimits(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAll})
	send := testEngine(t, Options{})
	ctx := context.Background()
	for _, bad := range []string{strings.Repeat("x", MaxTextBytes+1), strings.Repeat("é", MaxTextBytes/2) + "x", "a\xffb"} {
		if tr, err := send.SendItems(ctx, target(recv), Items{Text: bad}, SendOptions{}); err == nil {
			tr.Cancel()
			t.Errorf("a text of %d bytes was sent", len(bad))
		}
	}
	// Exactly the limit, in two-byte runes, goes through.
	full := strings.Repeat("é", MaxTextBytes/2)
	if _, res := sendItemsWait(t, send, target(recv), Items{Text: full}); res.State != StateDone || res.Text != full {
		t.Fatalf("a text of exactly %d bytes: %s %s", len(full), res.State, res.Err)
	}
	// Nothing at all is still nothing to send.
	if _, err := send.SendItems(ctx, target(recv), Items{}, SendOptions{}); !errors.Is(err, ErrNothingToSend) {
		t.Fatalf("an empty offer: %v, want ErrNothingToSend", err)
	}
	// The inbox bounds what any protocol hands it.
	in := recv.newInbox(send.ident.ID.Peer(), "mallory", "pipe", nil, nil)
	if err := in.Offer("d1", nil, strings.Repeat("y", MaxTextBytes+1)); !errors.Is(err, wire.ErrTooLarge) {
		t.Errorf("inbox took an oversized text: %v", err)
	}
	in = recv.newInbox(send.ident.ID.Peer(), "mallory", "pipe", nil, nil)
	if err := in.Offer("d2", nil, "bad \xfe"); !errors.Is(err, wire.ErrProtocol) {
		t.Errorf("inbox took invalid UTF-8: %v", err)
	}
	// A text keeps an offer whose every file name is refused.
	in = recv.newInbox(send.ident.ID.Peer(), "mallory", "pipe", nil, nil)
	if err := in.Offer("d3", core.Files{{Path: "../escape", Size: 1}}, "still here"); err != nil {
		t.Errorf("an offer with a text and only refused files: %v", err)
	}
}

// A receiver whose hello does not list the text feature (an older Ferry)
// is not sent a text it would silently drop: the sender stops with
// ErrTextUnsupported, which is not retried.
func TestTextToOlderReceiver(t *testing.T) {
	send := testEngine(t, Options{})
	old, err := identity.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cli, srv := newPipeConns(send.ident.ID, old.ID)
	r := &rawReceiver{t: t, conn: srv}
	greeted := make(chan error, 1)
	go func() { greeted <- r.greet(old) }() // its hello lists no features
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &Transfer{id: "old", dir: Sending, done: make(chan struct{}), started: time.Now()}
	tx := &sender{e: send, t: tr, text: "hi", chunkSize: 4096}
	err = tx.session(ctx, cli, "test", "", SendOptions{})
	cli.Close(nil)
	<-greeted
	if !errors.Is(err, ErrTextUnsupported) || core.Retryable(err) {
		t.Fatalf("session: %v (retryable %v), want ErrTextUnsupported, not retried", err, core.Retryable(err))
	}
	if r.offer != nil {
		t.Fatalf("the older receiver was sent an offer: %+v", r.offer)
	}
}

// Two texts from the same device are two transfers, not one resumed.
func TestTwoTextsAreTwoTransfers(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAll})
	send := testEngine(t, Options{})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	sendItemsWait(t, send, target(recv), Items{Text: "one"})
	sendItemsWait(t, send, target(recv), Items{Text: "two"})
	ids := map[string]string{}
	for len(ids) < 2 {
		ev := <-events
		if ev.Kind == EventResult {
			ids[ev.TransferID] = ev.Result.Text
		}
	}
	if len(ids) != 2 {
		t.Fatalf("results %v", ids)
	}
}

// "Save to…": the decision names the folder for this offer only; a folder
// that cannot be used is refused by Decide, so the prompt can say so.
func TestDecisionDest(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	chosen := filepath.Join(t.TempDir(), "chosen", "new")
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	events, unsub := recv.Subscribe(256)
	defer unsub()
	go func() {
		for ev := range events {
			if ev.Kind != EventOffer {
				continue
			}
			if err := recv.Decide(ev.TransferID, Decision{Accept: true, Dest: filepath.Join(blocker, "sub")}); err == nil {
				t.Error("Decide took a folder under a file")
			}
			if err := recv.Decide(ev.TransferID, Decision{Accept: true, Dest: chosen}); err != nil {
				t.Errorf("decide: %v", err)
			}
		}
	}()
	got := receivedResult(t, recv)
	src := t.TempDir()
	p := filepath.Join(src, "b.bin")
	writeFile(t, p, 5000)
	if res := sendWait(t, send, target(recv), []string{p}, SendOptions{}); res.State != StateDone {
		t.Fatalf("result %s %s", res.State, res.Err)
	}
	if r := <-got; r.Destination != chosen {
		t.Fatalf("destination %q, want %q", r.Destination, chosen)
	}
	if _, err := os.Stat(filepath.Join(chosen, "b.bin")); err != nil {
		t.Fatal(err)
	}
	emptyDir(t, recv.DownloadDir())
}

// Several recipients are several transfers: each has its own result, and
// one that fails stops none of the others.
func TestSeveralRecipients(t *testing.T) {
	send := testEngine(t, Options{RetryFor: -1})
	a := startReceiver(t, Options{Accept: AcceptAll})
	b := startReceiver(t, Options{Accept: AcceptAll})
	// A port nobody listens on: that recipient fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := targetAt(addr.TCP, l.Addr().String())
	l.Close()
	src := t.TempDir()
	p := filepath.Join(src, "photo.jpg")
	writeFile(t, p, 200_000)
	items := Items{Paths: []string{p}, Text: "for all of you"}
	ctx := context.Background()
	var trs []*Transfer
	for _, to := range []Target{target(a), dead, target(b)} {
		tr, err := send.SendItems(ctx, to, items, SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	for i, tr := range trs {
		select {
		case <-tr.Done():
		case <-time.After(time.Minute):
			t.Fatalf("transfer %d did not end", i)
		}
	}
	if r := trs[1].Result(); r.State != StateFailed {
		t.Errorf("the unreachable recipient: %s, want failed", r.State)
	}
	for _, i := range []int{0, 2} {
		if r := trs[i].Result(); r.State != StateDone || r.Verified != 1 || r.Text != items.Text {
			t.Errorf("recipient %d: %+v", i, r)
		}
	}
	if trs[0].ID() == trs[2].ID() {
		t.Error("two recipients share a transfer ID")
	}
	for _, r := range []*Engine{a, b} {
		if _, err := os.Stat(filepath.Join(r.DownloadDir(), "photo.jpg")); err != nil {
			t.Error(err)
		}
	}
}
