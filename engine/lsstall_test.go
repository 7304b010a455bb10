package engine

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/lspeer"
)

// TestLocalSendStalledSenderIsInterrupted: a LocalSend sender that stops
// in the middle of a file (its app put away) leaves its transfer
// interrupted after StallAfter, not "Receiving" at 0 B/s for as long as
// the connection lives (it did, for the 150 s that was watched); its next
// bytes make it active again, and the file arrives whole.
func TestLocalSendStalledSenderIsInterrupted(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{StallAfter: 300 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	data := bytes.Repeat([]byte("stall"), 200_000)
	pr, pw := io.Pipe()
	p := testPeer(t)
	sent := make(chan *lspeer.SendResult, 1)
	go func() {
		sr, _ := p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "big.bin", Body: pr, Size: int64(len(data))}}, nil)
		sent <- sr
	}()
	if _, err := pw.Write(data[:300_000]); err != nil {
		t.Fatal(err)
	}
	var id string
	next := func(want State) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case ev := <-events:
				if ev.Kind == EventResult {
					t.Fatalf("ended while waiting for %s: %+v", want, ev.Result)
				}
				if ev.Kind != EventProgress {
					t.Logf("%s %s", ev.Kind, ev.State)
				}
				if ev.Kind == EventState && ev.State == want && (id == "" || ev.TransferID == id) {
					id = ev.TransferID
					return
				}
			case <-timeout:
				t.Fatalf("no %s state", want)
			}
		}
	}
	next(StateInterrupted)
	if _, err := pw.Write(data[300_000:600_000]); err != nil {
		t.Fatal(err)
	}
	next(StateActive)
	if _, err := pw.Write(data[600_000:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	for ev := range events {
		if ev.Kind == EventResult && ev.TransferID == id {
			if ev.Result.State != StateDone || ev.Result.Verified != 1 {
				t.Fatalf("result %+v", ev.Result)
			}
			break
		}
	}
	if sr := <-sent; sr == nil || sr.UploadStatus["big.bin"] != 200 {
		t.Fatalf("the sender's upload: %+v", sr)
	}
}
