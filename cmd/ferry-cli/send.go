package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/peerresolve"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "send", summary: "send files and folders to a device", run: runSend})
}

// resolveTarget turns --to into a target. It is a variable so discovery can
// extend it to device names and IDs.
var resolveTarget = func(ctx context.Context, to string, cfg string, errOut io.Writer) (engine.Target, error) {
	if _, _, err := net.SplitHostPort(to); err != nil {
		return engine.Target{}, fmt.Errorf("%w: --to %q is not HOST:PORT", errUsage, to)
	}
	return engine.Target{Addr: to}, nil
}

func runSend(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("send", errOut)
	to := fs.String("to", "", "receiver `HOST:PORT`, device name or ID")
	id := fs.String("id", "", "refuse the receiver unless it proves this device `ID`")
	transport := fs.String("transport", "auto", "`auto`, quic or tcp")
	streams := fs.Int("streams", 0, "parallel data streams (0: the transport's default)")
	asJSON := fs.Bool("json", false, "print one JSON event per line instead of a progress bar")
	name := fs.String("name", "", "device `NAME` shown to the receiver")
	retryFor := fs.Duration("retry-for", 2*time.Minute, "keep reconnecting this long after the connection drops (0: never)")
	pair := fs.Bool("pair", false, "if the receiver is not trusted yet, ask to check its verification code; a match trusts it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return fmt.Errorf("%w: --to is required", errUsage)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no files or folders to send", errUsage)
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	target, err := resolveTarget(ctx, *to, *cfg, errOut)
	if err != nil {
		return err
	}
	if *id != "" {
		target.ID = *id
	}
	rf := *retryFor
	if rf == 0 {
		rf = -1 // the engine's "never"
	}
	// A device named by name or ID is followed: every attempt looks it up
	// again (a receiver that restarted on another port is found); an
	// explicit HOST:PORT is dialled as given.
	target.Follow = target.ID != "" && !isHostPortArg(*to)
	resolver := &peerresolve.Resolver{}
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Name: *name, RetryFor: rf, Resolver: resolver}))
	if err != nil {
		return err
	}
	defer e.Close()
	if target.Follow {
		defer follow(ctx, e, resolver)()
	}
	p := newPrinter(out, *asJSON)
	events, unsub := e.Subscribe(1024)
	defer unsub()
	tr, err := e.Send(ctx, target, fs.Args(), engine.SendOptions{Transport: *transport, Streams: *streams})
	if err != nil {
		return err
	}
	stopToggle := pauseOnSignal(e, tr.ID(), errOut)
	defer stopToggle()
	answers := newPrompter(stdin, errOut)
	for ev := range events {
		if ev.TransferID != tr.ID() {
			continue
		}
		p.event(ev)
		if ev.Kind == engine.EventPair && *pair {
			go func() {
				ok := answers.confirmCode(ctx, fmt.Sprintf("Does the screen of %s show the code %s? [y/n]: ", safetext.Name(ev.Peer.Name), ev.Pair.Code))
				if err := e.ConfirmPair(tr.ID(), ok); err != nil {
					fmt.Fprintf(errOut, "ferry-cli send: %v\n", err)
				}
			}()
		}
		if ev.Kind == engine.EventResult {
			break
		}
	}
	<-tr.Done()
	r := tr.Result()
	if r.State != engine.StateDone || r.Verified != r.Files {
		return exitError{code: 1, err: errors.New(r.Err)}
	}
	if r.Refused > 0 {
		return exitError{code: 1, err: fmt.Errorf("the receiver refused %d file(s) by name; the others arrived", r.Refused)}
	}
	return nil
}

// follow keeps discovery running for the send, for resolver; it is a
// variable so discovery can provide it (see discovery.go).
var follow = func(ctx context.Context, e *engine.Engine, resolver *peerresolve.Resolver) (stop func()) {
	return func() {}
}

// isHostPortArg reports whether --to is an address rather than a device.
func isHostPortArg(to string) bool {
	_, _, err := net.SplitHostPort(to)
	return err == nil
}

// exitError carries a process exit code; its message was already printed.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) ExitCode() int { return e.code }
