package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/peerresolve"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "send", summary: "send files, folders or a text to one device or several", run: runSend})
}

// resolveTarget turns --to into a target. It is a variable so discovery can
// extend it to device names and IDs.
var resolveTarget = func(ctx context.Context, to string, cfg string, lsScan bool, errOut io.Writer) (engine.Target, error) {
	if _, _, err := net.SplitHostPort(to); err != nil {
		return engine.Target{}, fmt.Errorf("%w: --to %q is not HOST:PORT", errUsage, to)
	}
	return engine.Target{Addrs: engine.AddrsAt(to)}, nil
}

// resolved is what resolving one --to gave: its target or why not, and
// what it said meanwhile (printed in the order of the --to given).
type resolved struct {
	target engine.Target
	said   string
	err    error
}

// resolveTargets resolves every --to: resolved[i] is tos[i]'s. It is a
// variable so discovery can look up every name in one window.
var resolveTargets = func(ctx context.Context, tos []string, cfg string, lsScan bool) []resolved {
	return resolveEach(tos, func(to string) resolved {
		var said strings.Builder
		t, err := resolveTarget(ctx, to, cfg, lsScan, &said)
		return resolved{target: t, said: said.String(), err: err}
	})
}

// resolveEach calls one for every --to at once, not one after another
// (a name nobody answers to waits for the whole discovery window), and
// returns their results in the order of tos.
func resolveEach(tos []string, one func(to string) resolved) []resolved {
	out := make([]resolved, len(tos))
	var wg sync.WaitGroup
	for i, to := range tos {
		wg.Go(func() { out[i] = one(to) })
	}
	wg.Wait()
	return out
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func runSend(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("send", errOut)
	var tos repeated
	fs.Var(&tos, "to", "receiver `HOST:PORT`, device name or ID; repeat it to send to several devices")
	id := fs.String("id", "", "refuse the receiver unless it proves this device `ID` (one --to only)")
	text := fs.String("text", "", "send this `TEXT` (a message, a link); - reads it from standard input (less the line break that ends it)")
	transport := fs.String("transport", "auto", "`auto`, quic or tcp")
	streams := fs.Int("streams", 0, "parallel data streams (0: the transport's default)")
	asJSON := fs.Bool("json", false, "print one JSON event per line instead of a progress bar")
	name := fs.String("name", "", "device `NAME` shown to the receiver")
	retryFor := fs.Duration("retry-for", 2*time.Minute, "keep reconnecting this long after the connection drops (0: never): it bounds each outage, from its first failed attempt to giving up, an attempt still connecting included; a transfer that moves bytes again starts it afresh")
	pair := fs.Bool("pair", false, "if a receiver is not trusted yet, ask to check its verification code; a match trusts it")
	protocol := fs.String("protocol", "auto", "`auto` (the protocol the device speaks; Ferry when it speaks both), ferry or localsend (force LocalSend: HOST[:PORT], or a device's name or fingerprint)")
	lsPIN := fs.String("localsend-pin", "", "`PIN` for a LocalSend receiver that asks for one (asked here when not given)")
	lsScan := fs.Bool("localsend-scan", false, "also look for LocalSend devices by registering with every host of this device's own /24 networks (where multicast does not pass)")
	relayAddr := fs.String("relay", "", "reach paired devices beyond the local network through the relay at `HOST:PORT` (see receive --anywhere); --to names a paired device")
	relaySecretFile := fs.String("relay-secret-file", "", "with --relay: the relay's secret, in a `FILE` (default: $FERRY_RELAY_SECRET; see ferry-cli relay --secret-file)")
	lsFP := fs.String("localsend-fingerprint", "", "refuse a LocalSend receiver at HOST:PORT unless its certificate has this `FINGERPRINT`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *protocol {
	case "auto", "ferry", "localsend":
	default:
		return fmt.Errorf("%w: --protocol %q: auto, ferry or localsend", errUsage, *protocol)
	}
	if len(tos) == 0 {
		return fmt.Errorf("%w: --to is required", errUsage)
	}
	if *streams < 0 || *streams > wire.MaxDataStreams {
		return fmt.Errorf("%w: --streams %d: 0 (the transport's default) to %d", errUsage, *streams, wire.MaxDataStreams)
	}
	if *retryFor < 0 {
		return fmt.Errorf("%w: --retry-for %v: 0 (never) or more", errUsage, *retryFor)
	}
	if *relaySecretFile != "" && *relayAddr == "" {
		return fmt.Errorf("%w: --relay-secret-file goes with --relay HOST:PORT", errUsage)
	}
	if *id != "" && len(tos) > 1 {
		return fmt.Errorf("%w: --id checks one receiver; with several --to, name each by its device ID instead", errUsage)
	}
	textGiven := false
	fs.Visit(func(f *flag.Flag) { textGiven = textGiven || f.Name == "text" })
	items := engine.Items{Paths: fs.Args(), Text: *text}
	if *text == "-" {
		t, err := readText(stdin)
		if err != nil {
			return err
		}
		items.Text = t
	}
	if textGiven && items.Text == "" {
		return fmt.Errorf("%w: the text is empty", errUsage)
	}
	if err := engine.CheckText(items.Text); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() == 0 && items.Text == "" {
		return fmt.Errorf("%w: no files, folders or --text to send", errUsage)
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	if *protocol == "localsend" {
		return runSendLocalSend(ctx, dir, *cfg, *name, tos, items, *lsPIN, *lsFP, *lsScan, *asJSON, engineRetry(*retryFor), out, errOut)
	}
	var targets []engine.Target
	unsendable := map[int]bool{} // --to that cannot be sent to (said already)
	follows := false
	var found []resolved
	if *relayAddr == "" {
		found = resolveTargets(ctx, tos, *cfg, *lsScan)
	}
	for i, to := range tos {
		if *relayAddr != "" {
			// A paired device, looked up once the engine is open (below).
			targets = append(targets, engine.Target{})
			continue
		}
		io.WriteString(errOut, found[i].said)
		target, err := found[i].target, found[i].err
		if err != nil {
			if len(tos) == 1 || errors.Is(err, errUsage) || ctx.Err() != nil {
				return err
			}
			// A device not found (gone meanwhile) or not told apart
			// stops none of the others, as one that cannot start does.
			fmt.Fprintf(errOut, "ferry-cli send: %s: %s\n", safetext.Name(to), shown(err.Error()))
			unsendable[len(targets)] = true
			targets = append(targets, engine.Target{})
			continue
		}
		if *id != "" {
			// A name that resolved to another device is refused, not sent
			// to the --id (which Follow would then look up instead).
			if err := sameDevice(to, target.ID, *id); err != nil {
				return err
			}
			target.ID = *id
		}
		// A device named by name or ID is followed: every attempt looks it
		// up again (a receiver that restarted on another port is found); an
		// explicit HOST:PORT is dialled as given. A device that speaks only
		// LocalSend is sent to over LocalSend, at the address found.
		_, lsOnly := lsTargetIn(target)
		target.Follow = target.ID != "" && !isHostPortArg(to) && !lsOnly
		follows = follows || target.Follow
		targets = append(targets, target)
	}
	rf := engineRetry(*retryFor)
	resolver := &peerresolve.Resolver{}
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Name: *name, RetryFor: rf, Resolver: resolver}))
	if err != nil {
		return err
	}
	defer e.Close()
	if *relayAddr != "" {
		if _, _, err := net.SplitHostPort(*relayAddr); err != nil {
			return fmt.Errorf("%w: --relay %q is not HOST:PORT", errUsage, *relayAddr)
		}
		secret, err := relaySecret(*relaySecretFile)
		if err == nil {
			err = e.SetRelaySecret(*relayAddr, secret)
		}
		if err != nil {
			return err
		}
		for i, to := range tos {
			pid, err := e.PairedDevice(to)
			if err == nil && *id != "" {
				err = sameDevice(to, pid, *id)
			}
			if err != nil {
				if len(tos) == 1 {
					return err
				}
				// One that cannot even start stops none of the others.
				fmt.Fprintf(errOut, "ferry-cli send: %s: %s\n", safetext.Name(to), shown(err.Error()))
				unsendable[i] = true
				continue
			}
			// What cannot change by retrying is said now (relay down, the
			// device not receiving there, a secret wrong), unless the
			// device answers on this network: then it is sent to there (a
			// --relay given always, as an alias does, failed at home when
			// the relay was down).
			if err := e.FindAnywhere(ctx, *relayAddr, pid); err != nil {
				if lan, ok := onLAN(ctx, e, pid); ok {
					fmt.Fprintf(errOut, "ferry-cli send: %s: %s; it answers on the local network: sending there\n", safetext.Name(to), shown(err.Error()))
					lan.Follow = true
					targets[i] = lan
					continue
				}
				if len(tos) == 1 {
					return err
				}
				fmt.Fprintf(errOut, "ferry-cli send: %s: %s\n", safetext.Name(to), shown(err.Error()))
				unsendable[i] = true
				continue
			}
			// Its LAN addresses (discovery, where it was last seen) first, then the relay.
			targets[i] = engine.Target{ID: pid, Addrs: []addr.Addr{addr.NewRendezvous(*relayAddr)}, Follow: true}
		}
		follows = true
	}
	if follows {
		defer follow(ctx, e, resolver)()
	}
	several := len(targets) > 1
	p := newPrinter(out, *asJSON)
	if several {
		p.bar = false // one bar cannot show several transfers
		if !*asJSON {
			// Nor does a slow device stay silent until its done line.
			p.quietEvery = quietProgress
		}
	}
	events, unsub := e.Subscribe(1024)
	defer unsub()
	// Each recipient gets a transfer of its own: its own progress, result
	// and resume. One that cannot even start stops none of the others.
	label := map[string]string{} // transfer ID -> the --to it goes to
	var trs []*engine.Transfer
	var failed []string
	answers := newPrompter(stdin, errOut)
	for i, target := range targets {
		if unsendable[i] {
			failed = append(failed, tos[i])
			continue
		}
		if j := sameAs(targets, i); j >= 0 {
			// The same device given twice (by name and by address, say):
			// one transfer, as a path given twice goes once.
			fmt.Fprintf(errOut, "ferry-cli send: %s is the same device as %s: sending to it once\n", safetext.Name(tos[i]), safetext.Name(tos[j]))
			continue
		}
		var tr *engine.Transfer
		var err error
		if lt, ok := lsTargetIn(target); ok {
			lt.Alias = tos[i]
			tr, err = e.SendLocalSend(ctx, lt, items, engine.LocalSendSendOptions{PIN: *lsPIN, AskPIN: askPIN(answers)})
		} else {
			tr, err = e.SendItems(ctx, target, items, engine.SendOptions{Transport: *transport, Streams: *streams})
		}
		if err != nil {
			if !several {
				return err
			}
			fmt.Fprintf(errOut, "ferry-cli send: %s: %s\n", safetext.Name(tos[i]), shown(err.Error()))
			failed = append(failed, tos[i])
			continue
		}
		label[tr.ID()] = tos[i]
		trs = append(trs, tr)
	}
	var ids []string
	for _, tr := range trs {
		ids = append(ids, tr.ID())
	}
	stopToggle := pauseOnSignal(e, ids, errOut)
	defer stopToggle()
	if several {
		p.prefix = func(ev engine.Event) string { return "[" + safetext.Name(label[ev.TransferID]) + "] " }
		p.to = func(ev engine.Event) string { return label[ev.TransferID] }
	}
	pending := len(trs)
	keyChanges := map[string]*engine.KeyChange{} // by transfer: the failure names the command that forgets
	asked := map[string]context.CancelFunc{}     // by transfer: withdraws the question about its code
	var questions sync.WaitGroup                 // the questions about codes still asked
	unreadable := 0                              // folders the walk could not read (every target's offer says the same)
	tooDeep := 0                                 // files and empty folders nested deeper than an offer takes
	p.hold()
	defer p.flush()
	batch := newBatcher(p, events)
	for pending > 0 {
		ev, ok := <-events
		if !ok {
			break
		}
		if _, mine := label[ev.TransferID]; !mine {
			continue
		}
		if !batch.print(ctx, ev) {
			break
		}
		if ev.Kind == engine.EventPair && *pair && asked[ev.TransferID] != nil && ev.Pair.Shown == engine.CodeShownNo {
			// The receiver accepted without showing the code: there is
			// nothing to compare, and the question goes.
			asked[ev.TransferID]()
		}
		if ev.Kind == engine.EventPair && *pair && ev.Pair.Shown == engine.CodeShownPending {
			// Asked while the receiver decides (one that asks shows the
			// code with its question); what its decision says of the code
			// comes as another EventPair, asked about no more.
			id := ev.TransferID
			if stop := asked[id]; stop != nil {
				stop() // the last session's code
			}
			qctx, stop := context.WithCancel(ctx)
			asked[id] = stop
			withdrawn := fmt.Sprintf("no answer needed about the code %s any more", ev.Pair.Code)
			questions.Add(1)
			go func() {
				defer questions.Done()
				ok, answered := answers.confirmCode(qctx, fmt.Sprintf("Does the screen of %s show the code %s? [y/n]: ", safetext.Name(ev.Peer.Name), ev.Pair.Code), withdrawn)
				if !answered {
					return // the send goes on untrusted: nobody said the codes differ
				}
				if err := e.ConfirmPair(id, ok); err != nil {
					fmt.Fprintf(errOut, "ferry-cli send: %v\n", err)
				}
			}()
		}
		if ev.Kind == engine.EventResult {
			pending--
		}
		if ev.Kind == engine.EventKeyChanged {
			keyChanges[ev.TransferID] = ev.KeyChange
		}
		if ev.Kind == engine.EventOffer && ev.Direction == engine.Sending && ev.Offer.Skipped != nil {
			unreadable, tooDeep = ev.Offer.Skipped.Unreadable, ev.Offer.Skipped.TooDeep
		}
	}
	// A code still asked about is moot once its send failed; one whose
	// files all arrived is not: pairing goes on after them (a small send
	// ends before anyone can type an answer), so it is waited for.
	for _, tr := range trs {
		stop := asked[tr.ID()]
		if stop == nil {
			continue
		}
		select {
		case <-tr.Done():
			if tr.Result().State == engine.StateDone {
				continue
			}
		default:
		}
		stop()
	}
	questions.Wait()
	var refused int
	var last error
	for _, tr := range trs {
		<-tr.Done()
		r := tr.Result()
		if r.State != engine.StateDone || r.Verified != r.Files {
			failed = append(failed, label[tr.ID()])
			last = withForgetWay(r.Err, keyChanges[tr.ID()])
		}
		refused += r.Refused
	}
	switch {
	case len(failed) > 0 && !several:
		return exitError{code: 1, err: last}
	case len(failed) > 0:
		return exitError{code: 1, err: fmt.Errorf("%d of %d recipients did not receive everything: %s", len(failed), len(targets), strings.Join(failed, ", "))}
	case refused > 0:
		return notTaken(refused)
	case unreadable > 0:
		// As rsync's "some files were not transferred": a script learns
		// that the folder did not arrive whole.
		return exitError{code: 1, err: fmt.Errorf("%d folder(s) could not be read here and were not sent (\"not sent\" above); the rest arrived", unreadable)}
	case tooDeep > 0:
		return exitError{code: 1, err: fmt.Errorf("%d file(s) or folder(s) are nested too deep to send and were not sent (\"not sent\" above); the rest arrived", tooDeep)}
	}
	return nil
}

// quietProgress is how long one of several transfers goes without a line
// before its progress is said.
const quietProgress = 10 * time.Second

// notTaken ends a send whose receiver did not take n of its files (it
// refused their names, or its user left them out): the others arrived.
func notTaken(n int) error {
	return exitError{code: 1, err: fmt.Errorf("the receiver did not take %d file(s) (FAILED above says why); the others arrived", n)}
}

// readText reads --text - from r: at most engine.MaxTextBytes of UTF-8,
// less the line break that ends what echo, a here-string or an editor's
// file gives (as the shell's $(...) drops it), which the receiver's
// clipboard would otherwise keep.
func readText(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, engine.MaxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("read the text from standard input: %w", err)
	}
	if len(b) > engine.MaxTextBytes {
		return "", fmt.Errorf("%w: the text on standard input is over %d KB; send it as a file", errUsage, engine.MaxTextBytes>>10)
	}
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	return s, nil
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

// engineRetry is --retry-for as the engine takes it: 0 is "never" there.
func engineRetry(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// sameDevice refuses a --to that is another device than --id says.
func sameDevice(to, got, want string) error {
	w, err := identity.ParseID(want)
	if err != nil {
		return fmt.Errorf("%w: --id %q: %v", errUsage, want, err)
	}
	if got == "" {
		return nil // an address: the handshake checks the ID
	}
	if g, err := identity.ParseID(got); err == nil && g != w {
		return fmt.Errorf("%q is the device %s, not the --id %s: nothing was sent", to, short(g.String()), short(w.String()))
	}
	return nil
}

// sameAs is the index of an earlier target that is the same device as
// targets[i] (its ID, or the same addresses), -1 when none.
func sameAs(targets []engine.Target, i int) int {
	t := targets[i]
	for j := range i {
		u := targets[j]
		if t.ID != "" && t.ID == u.ID || t.ID == "" && u.ID == "" && len(t.Addrs) > 0 && fmt.Sprint(t.Addrs) == fmt.Sprint(u.Addrs) {
			return j
		}
	}
	return -1
}

// onLAN looks for the device id on the local network (discovery, and a
// probe of where it was last seen): found, its target.
func onLAN(ctx context.Context, e *engine.Engine, id string) (engine.Target, bool) {
	p, _, stop, err := findPeer(ctx, e, id, false)
	if stop != nil {
		defer stop()
	}
	if err != nil {
		return engine.Target{}, false
	}
	return peerTarget(p), true
}
