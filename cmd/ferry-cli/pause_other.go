//go:build !unix

package main

import (
	"io"

	"github.com/ferrydrop/ferry/engine"
)

// pauseOnSignal: there is no SIGUSR1 here; stop with Ctrl-C and re-run the
// same command to resume.
func pauseOnSignal(e *engine.Engine, ids []string, errOut io.Writer) func() { return func() {} }
