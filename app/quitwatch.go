package app

import (
	"io"
	"log/slog"
	"runtime/pprof"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// quitBound is how long Ferry may take to stop once its window's loop has
// ended (the user quit, or the session asked it to: SIGTERM at logout).
// Stopping closes the engine, its listeners and the LocalSend server, which
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
	timer clock.Timer
}

// start arms the watch; stop disarms it once quitting is done.
func (q *quitWatch) start(bound time.Duration) {
	q.timer = clock.Or(q.clock).AfterFunc(bound, func() {
		q.log.Error("quitting took longer than " + bound.String() + "; stopping now. What was still running follows.")
		_ = pprof.Lookup("goroutine").WriteTo(q.out, 2)
		q.exit(1)
	})
}

func (q *quitWatch) stop() {
	if q.timer != nil {
		q.timer.Stop()
	}
}
