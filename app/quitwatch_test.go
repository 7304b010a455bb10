package app

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// lockedBuffer is a bytes.Buffer the watch's goroutine writes and the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hungInQuitting stands for a part of quitting that never returns; it
// closes started once it runs (a goroutine not yet run shows in a stack
// dump as the go statement's wrapper, gowrap, not as this function).
func hungInQuitting(started chan<- struct{}, release <-chan struct{}) {
	close(started)
	<-release
}

// A quit that takes longer than its bound ends the process with status 1,
// after the log says so and every goroutine's stack is written out, the
// hung one's included; not a moment before the bound.
func TestQuitThatHangsEndsWithItsStacks(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go hungInQuitting(started, release)
	<-started

	fake := clock.NewFake(time.Unix(1e9, 0))
	var out lockedBuffer
	exited := make(chan int, 1)
	q := &quitWatch{clock: fake, log: slog.New(slog.NewTextHandler(&out, nil)), out: &out,
		exit: func(code int) { exited <- code }}
	q.start(quitBound)
	defer q.stop()

	fake.Advance(quitBound - time.Millisecond)
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) before the bound", code)
	default:
	}
	fake.Advance(time.Millisecond)
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("a quit that hangs past its bound did not end the process")
	}
	text := out.String()
	for _, want := range []string{"quitting took longer than 15s", "goroutine ", "hungInQuitting"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
}

// A quit that finishes disarms the watch: nothing is left to fire.
func TestQuitThatFinishesIsNotEnded(t *testing.T) {
	fake := clock.NewFake(time.Unix(1e9, 0))
	q := &quitWatch{clock: fake, log: slog.New(slog.NewTextHandler(io.Discard, nil)), out: io.Discard,
		exit: func(code int) { t.Errorf("exited (%d) after quitting finished", code) }}
	q.start(quitBound)
	if fake.Timers() != 1 {
		t.Fatalf("%d timers armed, want 1", fake.Timers())
	}
	q.stop()
	if fake.Timers() != 0 {
		t.Fatalf("%d timers still armed after the quit finished", fake.Timers())
	}
	fake.Advance(time.Hour)
}

// A signal that quits the app (SIGTERM at logout: Fyne quits on it) arms
// the watch then, where it was armed only once the window's loop had
// ended, so a quit that hung inside Fyne's own stop was bounded by
// nothing.
func TestQuitWatchStartsOnTheSignal(t *testing.T) {
	fake := clock.NewFake(time.Unix(1e9, 0))
	exited := make(chan int, 1)
	q := &quitWatch{clock: fake, log: slog.New(slog.NewTextHandler(io.Discard, nil)), out: io.Discard,
		exit: func(code int) { exited <- code }}
	defer q.stop()
	sigs := make(chan os.Signal, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		q.startOn(t.Context(), sigs)
	}()
	sigs <- syscall.SIGTERM
	<-watched
	fake.Advance(quitBound)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("a quit that hangs past its bound from the signal did not end the process")
	}
}

// Now that several ask for it (a signal, Quit, the loop's end), the watch
// is armed once, from the first, and never after quitting is done (Run's
// deferred stop): it was armed again by each, and a later timer outlived
// the stop of the first.
func TestQuitWatchArmsOnceAndNotAfterQuitting(t *testing.T) {
	fake := clock.NewFake(time.Unix(1e9, 0))
	q := &quitWatch{clock: fake, log: slog.New(slog.NewTextHandler(io.Discard, nil)), out: io.Discard,
		exit: func(code int) { t.Errorf("exited (%d) after quitting finished", code) }}
	q.start(quitBound)
	q.start(quitBound)
	if fake.Timers() != 1 {
		t.Fatalf("%d timers armed by two starts, want 1", fake.Timers())
	}
	q.stop()
	q.start(quitBound)
	if fake.Timers() != 0 {
		t.Fatalf("%d timers armed after quitting finished", fake.Timers())
	}
	fake.Advance(time.Hour)
}
