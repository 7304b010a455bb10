package localsend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/trace"
	"testing"

	xtrace "golang.org/x/exp/trace" // reads runtime traces back (not a tracer of ours)
)

// Each upload is a trace task whose regions are its steps, so that a
// runtime trace of a receive tells, per file, what it waited for
// (docs/localsend.md, "Figures").
func TestUploadStepsAreTraced(t *testing.T) {
	if trace.IsEnabled() {
		t.Skip("a trace is running already (go test -trace)")
	}
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Info: Info{Alias: "rx"}, Receiver: rx})
	cl := NewClient(ClientConfig{Info: Info{Alias: "tx"}, Cert: testCert(t, 1)})
	var files []Upload
	for i := range 3 {
		files = append(files, bytesUpload(fmt.Sprint("f", i), fmt.Sprintf("%d.bin", i), pattern(700<<10+i), false))
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	_, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, files, SendOptions{})
	endErr := <-rx.ends
	trace.Stop()
	if err != nil || endErr != nil {
		t.Fatalf("send: %v, session end: %v", err, endErr)
	}

	r, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	uploads := map[xtrace.TaskID]bool{}
	steps := map[xtrace.TaskID][]string{} // region types, in the order they began
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind() {
		case xtrace.EventTaskBegin:
			if tk := ev.Task(); tk.Type == uploadTrace {
				uploads[tk.ID] = true
			}
		case xtrace.EventRegionBegin:
			rg := ev.Region()
			steps[rg.Task] = append(steps[rg.Task], rg.Type)
		}
	}
	if len(uploads) != len(files) {
		t.Fatalf("%d upload tasks, want %d", len(uploads), len(files))
	}
	want := fmt.Sprint([]string{traceOpen, traceReceive, traceDrain, traceCommit})
	for id := range uploads {
		if got := fmt.Sprint(steps[id]); got != want {
			t.Errorf("upload task %d: regions %s, want %s", id, got, want)
		}
	}
}
