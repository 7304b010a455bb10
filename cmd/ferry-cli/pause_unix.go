//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferrydrop/ferry/engine"
)

// pauseOnSignal toggles pause/resume of the sending transfers ids (one per
// recipient) on SIGUSR1 (`kill -USR1 PID`). It returns a function that
// stops listening.
func pauseOnSignal(e *engine.Engine, ids []string, errOut io.Writer) func() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		paused := false
		for {
			select {
			case <-done:
				return
			case <-sig:
				ok := false
				for _, id := range ids {
					var err error
					if paused {
						err = e.Resume(id)
					} else {
						err = e.Pause(id)
					}
					if err != nil {
						fmt.Fprintf(errOut, "ferry-cli send: %v\n", err)
						continue
					}
					ok = true
				}
				if ok {
					paused = !paused
				}
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}
