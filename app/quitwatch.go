package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// quitBound is how long Ferry may take to stop once it was asked to quit
// (the user quit, or the session asked it to: SIGTERM at logout), Fyne's
// own stop of its window's loop included. Stopping closes the engine, its listeners and the LocalSend server, which
// takes well under a second; a quit that hangs past this is a bug, and a
// Ferry that stays running after the user quit it holds its port and its
// config dir (the next launch would hand its files to the hung one).
const quitBound = 15 * time.Second

// quitWatch ends the process when quitting takes longer than its bound,
// after writing every goroutine's stack to its log, so that what hung is
// on record (once, the GUI smoke test's instance did not quit within 12
// minutes of SIGTERM, with nothing to say why).
type quitWatch struct {
	clock clock.Clock
	log   *slog.Logger
	out   io.Writer // where the stacks go: the log's stream
	exit  func(code int)

	mu      sync.Mutex // guards the fields below
	timer   clock.Timer
	stopped bool
}

// start arms the watch, once: quitting begins where the user or the
// session asks for it (a signal, Quit), not only where the window's loop
// has ended, so a quit that hangs inside Fyne's own stop (its loop, the
// tray's D-Bus connection closed on the way) is bounded too. stop disarms
// it once quitting is done, for good.
func (q *quitWatch) start(bound time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil || q.stopped {
		return
	}
	q.timer = clock.Or(q.clock).AfterFunc(bound, func() {
		q.log.Error("quitting took longer than " + bound.String() + "; stopping now. What was still running follows.")
		_ = pprof.Lookup("goroutine").WriteTo(q.out, 2)
		q.exit(1)
	})
}

// startOn starts the watch when a signal that quits the app arrives on
// sigs (Fyne quits on SIGINT and SIGTERM itself), until ctx ends.
func (q *quitWatch) startOn(ctx context.Context, sigs <-chan os.Signal) {
	select {
	case <-sigs:
		q.start(quitBound)
	case <-ctx.Done():
	}
}

func (q *quitWatch) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	if q.timer != nil {
		q.timer.Stop()
	}
}
