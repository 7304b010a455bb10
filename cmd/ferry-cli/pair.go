package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "pair", summary: "pair with a device: both screens show a code to compare; a match trusts it", run: runPair})
}

// stdin is where the commands read the user's answers (tests replace it).
var stdin io.Reader = os.Stdin

func runPair(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("pair", errOut)
	to := fs.String("to", "", "the device to pair with: `HOST:PORT`, device name or ID (it must be receiving)")
	id := fs.String("id", "", "refuse the device unless it proves this device `ID`")
	name := fs.String("name", "", "device `NAME` shown to the other device")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return fmt.Errorf("%w: --to is required", errUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	target, err := resolveTarget(ctx, *to, *cfg, false, errOut)
	if err != nil {
		return err
	}
	if _, ok := lsTargetIn(target); ok {
		return fmt.Errorf("%s speaks only LocalSend: pairing codes are between Ferry devices", safetext.Name(*to))
	}
	if *id != "" {
		target.ID = *id
	}
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Name: *name}))
	if err != nil {
		return err
	}
	defer e.Close()
	events, unsub := e.Subscribe(256)
	defer unsub()
	tr, err := e.Pair(ctx, target)
	if err != nil {
		return err
	}
	answers := newPrompter(stdin, errOut)
	// The code's question ends with the pairing: its lines ("Waiting for
	// the other device's user ...") come before the result's, and are not
	// written beside them.
	qctx, endQuestion := context.WithCancel(ctx)
	var asking sync.WaitGroup
	defer func() { endQuestion(); asking.Wait() }()
	p := newPrinter(out, false)
	p.newKey = "pair again with --id %s to pair with the device with the new key"
	var peer engine.PeerInfo
	var keyChange *engine.KeyChange
	for ev := range events {
		if ev.TransferID != tr.ID() {
			continue
		}
		switch ev.Kind {
		case engine.EventPair:
			peer = ev.Peer
			fmt.Fprintf(out, "Pairing with %s (%s). Verification code: %s\n", safetext.Name(ev.Peer.Name), short(ev.Peer.ID), ev.Pair.Code)
			asking.Go(func() {
				ok, answered := answers.confirmCode(qctx, fmt.Sprintf("Does the screen of %s show the same code? [y/n]: ", safetext.Name(ev.Peer.Name)), "")
				if !answered {
					if qctx.Err() == nil || ctx.Err() != nil { // not ended with the pairing, below
						e.Cancel(tr.ID()) // not "the codes differ": nobody could say
					}
					return
				}
				if err := e.ConfirmPair(tr.ID(), ok); err != nil {
					fmt.Fprintf(errOut, "ferry-cli pair: %v\n", err)
				}
				if ok {
					fmt.Fprintln(out, "Waiting for the other device's user to confirm...")
				}
			})
		case engine.EventKeyChanged:
			keyChange = ev.KeyChange
			p.event(ev)
		}
		if ev.Kind == engine.EventResult {
			break
		}
	}
	<-tr.Done()
	endQuestion()
	asking.Wait()
	r := tr.Result()
	if r.State != engine.StateDone {
		return exitError{code: 1, err: withForgetWay(r.Err, keyChange)}
	}
	fmt.Fprintf(out, "Paired with %s (%s): each device now trusts the other.\n", safetext.Name(peer.Name), short(peer.ID))
	return nil
}

// confirmCode asks the user a yes/no question about a verification code;
// answered is false when nobody could answer (standard input ended, or
// ctx did): that is no "the codes differ", which warns the other side of
// someone in the middle. withdrawn, when not "", is said when ctx ends
// while the question is shown (the other device cancelled, or went away).
func (p *prompter) confirmCode(ctx context.Context, question, withdrawn string) (match, answered bool) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return false, false
	}
	defer func() { <-p.sem }()
	answer, ok := p.choose(ctx, question, "y", "yes", "n", "no")
	switch {
	case !ok && ctx.Err() == nil:
		fmt.Fprintln(p.out, "no answer: standard input is closed, so the code is not confirmed")
	case !ok && withdrawn != "":
		fmt.Fprintf(p.out, "\n(%s)\n", withdrawn)
	}
	return answer == "y" || answer == "yes", ok
}

// yes asks a yes/no question until it is answered; the end of input is
// no. Called with sem held.
func (p *prompter) yes(ctx context.Context, question string) bool {
	answer, _ := p.choose(ctx, question, "y", "yes", "n", "no")
	return answer == "y" || answer == "yes"
}

// choose asks question until the answer is one of answers (any case), and
// returns it in lower case; ok is false when standard input ended first, or
// ctx did (the question was withdrawn). A slip of the finger is asked about
// again, never taken for "no".
func (p *prompter) choose(ctx context.Context, question string, answers ...string) (answer string, ok bool) {
	for {
		fmt.Fprint(p.out, question)
		line, err := p.readLine(ctx)
		answer = strings.ToLower(strings.TrimSpace(line))
		if slices.Contains(answers, answer) {
			return answer, true
		}
		if err != nil {
			return "", false
		}
		if answer != "" {
			var short []string
			for _, a := range answers {
				if len(a) == 1 {
					short = append(short, a)
				}
			}
			last := len(short) - 1
			fmt.Fprintf(p.out, "Please type %s or %s.\n", strings.Join(short[:last], ", "), short[last])
		}
	}
}
