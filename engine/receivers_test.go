package engine

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeRow is a row of the receiver table that records what the engine
// asks of it; listenErr and serveErr make it fail.
type fakeRow struct {
	name      string
	listenErr error
	serveErr  chan error // Serve returns what arrives here (nil channel: only ctx ends it)

	mu        sync.Mutex // guards the fields below
	canResume bool
	calls     []string
	open      bool
	serving   chan struct{} // closed when Serve starts
	served    chan struct{} // closed when Serve returns
}

func newFakeRow(name string) *fakeRow { return &fakeRow{name: name, canResume: true} }

func (r *fakeRow) record(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *fakeRow) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *fakeRow) Name() string { return r.name }

func (r *fakeRow) Listen() error {
	r.record("listen")
	if r.listenErr != nil {
		return r.listenErr
	}
	r.mu.Lock()
	r.open = true
	r.serving, r.served = make(chan struct{}), make(chan struct{})
	r.mu.Unlock()
	return nil
}

func (r *fakeRow) chans() (serving, served chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serving, r.served
}

func (r *fakeRow) Serve(ctx context.Context) error {
	r.record("serve")
	serving, served := r.chans()
	close(serving)
	defer close(served)
	select {
	case <-ctx.Done():
		return nil
	case err := <-r.serveErr:
		return err
	}
}

func (r *fakeRow) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		return nil
	}
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 53317}
}

func (r *fakeRow) Withdraw() { r.record("withdraw") }

func (r *fakeRow) Resume() bool {
	r.record("resume")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.canResume {
		r.serving, r.served = make(chan struct{}), make(chan struct{})
	}
	return r.canResume
}

// socketGone makes the row release its socket while withdrawn.
func (r *fakeRow) socketGone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canResume = false
}

func (r *fakeRow) Close() error {
	r.record("close")
	r.mu.Lock()
	r.open = false
	r.mu.Unlock()
	return nil
}

func statusOf(e *Engine, name string) (ListenerStatus, bool) {
	for _, st := range e.Listeners() {
		if st.Transport == name {
			return st, true
		}
	}
	return ListenerStatus{}, false
}

// listenerEvent waits for the EventListener of the row called name.
func listenerEvent(t *testing.T, events <-chan Event, name string) ListenerStatus {
	t.Helper()
	for ev := range events {
		if ev.Kind == EventListener && ev.Listener != nil && ev.Listener.Transport == name {
			return *ev.Listener
		}
	}
	t.Fatalf("no listener event for %s", name)
	return ListenerStatus{}
}

// A row that cannot open, or that stops serving, is reported on its own;
// Ferry's rows go on receiving.
func TestReceiverRowFailsAlone(t *testing.T) {
	t.Parallel()
	recv := testEngine(t, Options{})
	broken := newFakeRow("localsend")
	broken.listenErr = &LocalError{Err: errors.New("listen tcp :53317: bind: address already in use")}
	quitter := newFakeRow("weblink")
	quitter.serveErr = make(chan error, 1)
	for _, r := range []*fakeRow{broken, quitter} {
		if err := recv.AddReceiver(r); err != nil {
			t.Fatal(err)
		}
	}
	events, unsub := recv.Subscribe(64)
	defer unsub()
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := listenerEvent(t, events, "localsend")
	if !strings.HasPrefix(st.Err, "Could not open a network socket on this device") {
		t.Errorf("reported %+v", st)
	}
	if st, ok := statusOf(recv, "localsend"); !ok || st.Err == "" || st.Addr != "" {
		t.Errorf("Listeners says %+v", st)
	}
	if st, ok := statusOf(recv, "weblink"); !ok || st.Err != "" || st.Addr != "192.0.2.1:53317" {
		t.Errorf("Listeners says %+v", st)
	}
	serving, served := quitter.chans()
	<-serving
	quitter.serveErr <- errors.New("the web server stopped")
	<-served
	if st := listenerEvent(t, events, "weblink"); !strings.Contains(st.Err, "web server stopped") {
		t.Errorf("reported %+v", st)
	}
	if st, ok := statusOf(recv, "weblink"); !ok || st.Err == "" {
		t.Errorf("Listeners says %+v after the row stopped", st)
	}
	if !recv.Receiving() {
		t.Fatal("not receiving")
	}
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<16)
	if res := sendWait(t, send, target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
}

// StopReceiving withdraws every row, Start takes them back, StopReceivingNow
// and Close close them; a row that released its socket listens anew.
func TestReceiverTableLifecycle(t *testing.T) {
	t.Parallel()
	e := testEngine(t, Options{})
	row := newFakeRow("localsend")
	if err := e.AddReceiver(row); err != nil {
		t.Fatal(err)
	}
	want := func(calls ...string) {
		t.Helper()
		if got := row.Calls(); !slices.Equal(got, calls) {
			t.Fatalf("calls %v, want %v", got, calls)
		}
	}
	want()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	serving, served := row.chans()
	<-serving
	want("listen", "serve")
	if err := e.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	<-served
	want("listen", "serve", "withdraw")
	if e.Receiving() || e.Listeners() != nil {
		t.Fatal("receiving after StopReceiving")
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	serving, served = row.chans()
	<-serving
	want("listen", "serve", "withdraw", "resume", "serve")
	if err := e.StopReceivingNow(); err != nil {
		t.Fatal(err)
	}
	<-served
	want("listen", "serve", "withdraw", "resume", "serve", "withdraw", "close")
	// Withdrawn again, and this time its socket went meanwhile.
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	serving, served = row.chans()
	<-serving
	if err := e.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	<-served
	row.socketGone()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	serving, _ = row.chans()
	<-serving
	want("listen", "serve", "withdraw", "resume", "serve", "withdraw", "close",
		"listen", "serve", "withdraw", "resume", "close", "listen", "serve")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	want("listen", "serve", "withdraw", "resume", "serve", "withdraw", "close",
		"listen", "serve", "withdraw", "resume", "close", "listen", "serve", "withdraw", "close")
	if err := e.AddReceiver(newFakeRow("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddReceiver after Close: %v", err)
	}
}

// A row added while receiving opens and serves at once; one that cannot
// open says so.
func TestAddReceiverWhileReceiving(t *testing.T) {
	t.Parallel()
	e := startReceiver(t, Options{})
	row := newFakeRow("weblink")
	if err := e.AddReceiver(row); err != nil {
		t.Fatal(err)
	}
	serving, _ := row.chans()
	<-serving
	if st, ok := statusOf(e, "weblink"); !ok || st.Addr == "" {
		t.Fatalf("Listeners says %+v", st)
	}
	broken := newFakeRow("localsend")
	broken.listenErr = errors.New("bind: permission denied")
	if err := e.AddReceiver(broken); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("AddReceiver of a row that cannot listen: %v", err)
	}
	if st, ok := statusOf(e, "localsend"); !ok || st.Err == "" {
		t.Fatalf("Listeners says %+v", st)
	}
	if as := e.Addrs(); len(as) != 2 || as[0].Kind != "quic" || as[1].Kind != "tcp" {
		t.Fatalf("Ferry's rows: %v", as)
	}
}

func TestRemoveReceiver(t *testing.T) {
	t.Parallel()
	e := startReceiver(t, Options{})
	events, unsub := e.Subscribe(64)
	defer unsub()
	row := newFakeRow("localsend")
	if err := e.AddReceiver(row); err != nil {
		t.Fatal(err)
	}
	serving, served := row.chans()
	<-serving
	if err := e.RemoveReceiver(row); err != nil {
		t.Fatal(err)
	}
	<-served // its Serve ended, and then it was closed
	if got := strings.Join(row.Calls(), ","); got != "listen,serve,close" {
		t.Fatalf("calls %s", got)
	}
	if st, ok := statusOf(e, "localsend"); ok {
		t.Fatalf("a removed row is still listed: %+v", st)
	}
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventListener {
			t.Fatalf("a removed row was reported as failing: %+v", ev.Listener)
		}
	}
	// Receiving again leaves it out; removing it twice does nothing.
	if err := e.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(row.Calls(), ","); got != "listen,serve,close" {
		t.Fatalf("a removed row was opened again: %s", got)
	}
	if err := e.RemoveReceiver(row); err != nil {
		t.Fatal(err)
	}
	// A withdrawn row (receiving off) is closed without a Serve to end.
	other := newFakeRow("weblink")
	if err := e.AddReceiver(other); err != nil {
		t.Fatal(err)
	}
	if err := e.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveReceiver(other); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(other.Calls(), ","); got != "listen,serve,withdraw,close" {
		t.Fatalf("calls %s", got)
	}
}
