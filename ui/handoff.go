package ui

import (
	"context"
	"runtime"

	"fyne.io/fyne/v2"
)

// Do hands f to the Fyne goroutine, as fyne.Do does, and drops it once
// the app has stopped. Fyne 2.7.1's driver, stopping, closes its queue of
// such functions after a check that fyne.Do makes first
// (internal/driver/glfw/loop.go: drained, funcQueue.Close): a fyne.Do
// between the two panicked "send on closed channel" in the goroutine that
// called it, so a Ferry quitting while its loops still handed the window
// an update exited 2 (seen in TestGUIEndToEnd: a second close without a
// tray host). f would not have run then anyway: the window is gone. Every
// goroutine of the app hands work to the window through Do or DoAndWait.
func Do(f func()) { handOff(fyne.Do, f) }

// DoAndWait is Do that waits until f ran, or until ctx ends (f may then
// run later, or never); it reports whether f ran. It does not wait in
// fyne.DoAndWait: Fyne 2.7.1's driver, stopping, answers only the
// functions already at the head of its queue (internal/driver/glfw/loop.go:
// the drain reads funcQueue.Out while the queue may still hold more, then
// closes it), and a fyne.DoAndWait handed over at that moment waited for
// good; a hook that read the window every 100 ms (FERRY_SMOKE_DESCRIBE)
// then held the app's quit, which waits for its goroutines. The app ends
// ctx once its window's loop has ended.
func DoAndWait(ctx context.Context, f func()) bool { return doAndWait(ctx, fyne.Do, f) }

// doAndWait is DoAndWait handing f over with do.
func doAndWait(ctx context.Context, do func(func()), f func()) bool {
	done := make(chan struct{})
	handOff(do, func() {
		defer close(done)
		f()
	})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// handOff calls do(f) and takes back the panic of a send on do's closed
// queue (do runs f on another goroutine, so no panic of f's reaches here);
// any other panic goes on.
func handOff(do func(func()), f func()) {
	defer func() {
		if r := recover(); r != nil {
			if err, ok := r.(runtime.Error); ok && err.Error() == "send on closed channel" {
				return
			}
			panic(r)
		}
	}()
	do(f)
}
