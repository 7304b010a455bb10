package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"github.com/ferrydrop/ferry/internal/numtext"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{name: "receive", summary: "receive files from other devices", run: runReceive})
}

// defaultPort is tried first so that firewall rules and remembered peers keep
// working across restarts; any free port is used when it is taken.
const defaultPort = "47800"

// advertise starts discovery for a receiving engine; it is a variable so the
// discovery integration can provide it. It returns a function that stops it.
var advertise = func(ctx context.Context, e *engine.Engine, errOut io.Writer) (func(), error) { return func() {}, nil }

func runReceive(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("receive", errOut)
	dir := fs.String("dir", "", "download `DIR` (default: ~/Downloads)")
	listen := fs.String("listen", "", "`HOST:PORT` for QUIC (UDP) and TCP (default: port "+defaultPort+", or any free port)")
	accept := fs.String("accept", "ask", "who may send: `ask` (prompt here), all, or trusted")
	once := fs.Bool("once", false, "exit after one transfer, with its status (an interrupted one is waited for: its sender comes back with the rest)")
	name := fs.String("name", "", "device `NAME` shown to senders")
	asJSON := fs.Bool("json", false, "print one JSON event per line")
	noDiscovery := fs.Bool("no-discovery", false, "do not advertise this device on the local network (nor announce it to LocalSend devices)")
	lsf := addLocalSendFlags(fs)
	noResume := fs.Bool("no-resume", false, "keep no resume state (benchmarks: measures what resume costs)")
	pair := fs.Bool("pair", false, "ask to check the verification code of every sender not trusted yet; a match trusts it")
	maxAge := fs.Duration("partial-max-age", 7*24*time.Hour, "discard unfinished incoming transfers untouched for this long (0: keep forever)")
	link := fs.Bool("link", false, "receive from browsers instead: print a link and a QR code whose page sends files here (see share)")
	linkPIN := fs.String("pin", "", "with --link: ask browsers for this `PIN` first")
	linkExpire := fs.Duration("expire", time.Hour, "with --link: end the link after this `DURATION`")
	anywhere := fs.Bool("anywhere", false, "also let paired devices reach this one beyond the local network, through --relay (publishes, under names only they can compute, that this device receives there)")
	relay := fs.String("relay", "", "with --anywhere: the relay's `HOST:PORT` (see ferry-cli relay)")
	relaySecretFile := fs.String("relay-secret-file", "", "with --relay: the relay's secret, in a `FILE` (default: $FERRY_RELAY_SECRET; see ferry-cli relay --secret-file)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// Files would go to the default folder, not where the user meant.
		return fmt.Errorf("%w: receive takes no arguments, got %q (the download folder is --dir DIR)", errUsage, fs.Args())
	}
	if *link {
		return runReceiveLink(ctx, *cfg, linkFlags{listen: *listen, name: *name, pin: *linkPIN, expire: *linkExpire, json: *asJSON}, *dir, out)
	}
	policy, err := engine.ParseAcceptPolicy(*accept)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *anywhere != (*relay != "") {
		return fmt.Errorf("%w: --anywhere and --relay HOST:PORT go together", errUsage)
	}
	if *relaySecretFile != "" && *relay == "" {
		return fmt.Errorf("%w: --relay-secret-file goes with --anywhere --relay HOST:PORT", errUsage)
	}
	var secret string
	if *anywhere {
		if secret, err = relaySecret(*relaySecretFile); err != nil {
			return err
		}
	}
	cdir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	opts := engine.Options{ConfigDir: cdir, Name: *name, DownloadDir: *dir, Accept: policy, Listen: *listen, DisableResume: *noResume,
		MaxPartialAge: keepForever(*maxAge), ShowsCodes: *pair}
	opts = envOptions(opts)
	if opts.Listen == "" {
		opts.Listen = ":" + defaultPort
	}
	e, err := engine.New(opts)
	if err != nil {
		return err
	}
	defer e.Close()
	if *dir != "" {
		if err := e.SetDownloadDir(*dir); err != nil {
			return err
		}
	}
	events, unsub := e.Subscribe(1024)
	defer unsub()
	if err := e.Start(ctx); err != nil {
		if *listen != "" {
			return err
		}
		e.Close()
		opts.Listen = ":0"
		if e, err = engine.New(opts); err != nil {
			return err
		}
		defer e.Close()
		unsub()
		events, unsub = e.Subscribe(1024)
		defer unsub()
		if err := e.Start(ctx); err != nil {
			return err
		}
	}
	for _, st := range e.Listeners() {
		if st.Err != "" {
			fmt.Fprintf(errOut, "ferry-cli receive: %s is not listening, the other transports receive: %s\n", strings.ToUpper(st.Transport), st.Err)
		}
	}
	// The relay is checked before "listening" is said: a script that
	// waits on it must not see this ready and then an exit (a wrong
	// secret, a relay down).
	if *anywhere {
		if err := e.SetRelaySecret(*relay, secret); err != nil {
			return err
		}
		stop, err := e.ServeAnywhere(*relay)
		if err != nil {
			return fmt.Errorf("cannot receive from anywhere: %w", err)
		}
		// The engine ends first: its sessions that came through the relay
		// say goodbye through the bridges serving keeps open for that
		// (stopping to serve first cut them, and the sender heard nothing
		// until its connection went silent for 10 s).
		defer func() { e.Close(); stop() }()
	}
	// One kind=HOST:PORT per transport (empty for one that does not listen).
	var at strings.Builder
	for _, st := range e.Listeners() {
		fmt.Fprintf(&at, "%s=%s ", st.Transport, st.Addr)
	}
	fmt.Fprintf(out, "listening %sid=%s name=%q dir=%q\n", at.String(), e.ID(), e.Name(), e.DownloadDir())
	if err := e.ResumeProblem(); err != nil {
		fmt.Fprintf(errOut, "ferry-cli receive: an interrupted transfer will start again from its beginning: its progress cannot be kept (%v)\n", err)
	}
	if *lsf.on {
		lsHost, _, _ := net.SplitHostPort(*listen) // LocalSend listens on --listen's host too
		stop, err := startLocalSend(ctx, e, lsf, lsHost, !*noDiscovery, errOut)
		if err != nil {
			fmt.Fprintf(errOut, "ferry-cli receive: LocalSend devices cannot send here: %v\n", err)
		} else {
			defer stop()
		}
	}
	if !*noDiscovery {
		stop, err := advertise(ctx, e, errOut)
		if err != nil {
			fmt.Fprintf(errOut, "ferry-cli receive: not advertising on the local network: %v\n", err)
		} else {
			defer stop()
		}
	}
	if *anywhere {
		fmt.Fprintf(out, "reachable from anywhere through relay %s\n", *relay)
	}
	p := newPrinter(out, *asJSON)
	p.excerpt = policy == engine.AcceptAll
	p.hold()
	defer p.flush()
	batch := newBatcher(p, events)
	answers := newPrompter(stdin, errOut)
	var asking sync.WaitGroup // code questions: --once waits for the answer before it exits
	// Each offer asked about is asked while it waits: its end (cancelled,
	// its sender gone, expired) withdraws the question, and the next
	// offer is asked at once (it waited behind a question no one could
	// answer any more).
	var offersMu sync.Mutex
	offers := map[string]context.CancelFunc{}
	// So is a verification code asked about: a pairing whose other side
	// cancelled or went away ends, and its question with it (one
	// transfer may have both questions: its code, and its offer).
	codes := map[string]context.CancelFunc{}
	withdraw := func(id string) {
		offersMu.Lock()
		defer offersMu.Unlock()
		if cancel := offers[id]; cancel != nil {
			cancel()
			delete(offers, id)
		}
	}
	withdrawCode := func(id string) {
		offersMu.Lock()
		defer offersMu.Unlock()
		if cancel := codes[id]; cancel != nil {
			cancel()
			delete(codes, id)
		}
	}
	for {
		select {
		case <-ctx.Done():
			tellSums(func() { e.Close() }, events, p)
			return stopped(*once)
		case ev := <-events:
			if !batch.print(ctx, ev) {
				tellSums(func() { e.Close() }, events, p)
				return stopped(*once)
			}
			switch ev.Kind {
			case engine.EventOffer:
				if ev.Direction != engine.Receiving || ev.State != engine.StateWaiting {
					break // what arrives unasked, or this side's own offer: nothing to answer
				}
				octx, cancel := context.WithCancel(ctx)
				offersMu.Lock()
				offers[ev.TransferID] = cancel
				offersMu.Unlock()
				go func() {
					defer withdraw(ev.TransferID)
					d := answers.ask(octx, ev, func(ok bool) error { return e.ConfirmPair(ev.TransferID, ok) },
						func(shown bool) { _ = e.OfferOnScreen(ev.TransferID, shown) })
					if octx.Err() != nil {
						return // withdrawn: nothing to decide
					}
					if err := e.Decide(ev.TransferID, d); err != nil {
						fmt.Fprintf(errOut, "ferry-cli receive: %v\n", err)
					}
				}()
			case engine.EventPair:
				if !ev.Pair.Only && !*pair {
					break
				}
				qctx, cancel := context.WithCancel(ctx)
				offersMu.Lock()
				codes[ev.TransferID] = cancel
				offersMu.Unlock()
				asking.Add(1)
				go func() {
					defer asking.Done()
					defer withdrawCode(ev.TransferID)
					q := fmt.Sprintf("\n%s (%s) sends with verification code %s. Does its screen show the same code? [y/n]: ",
						safetext.Name(ev.Peer.Name), short(ev.Peer.ID), ev.Pair.Code)
					if ev.Pair.Only {
						q = fmt.Sprintf("\n%s (%s) asks to pair, with verification code %s. Does its screen show the same code? [y/n]: ",
							safetext.Name(ev.Peer.Name), short(ev.Peer.ID), ev.Pair.Code)
					}
					what := "code check"
					if ev.Pair.Only {
						what = "pairing request"
					}
					withdrawn := fmt.Sprintf("the %s from %s was withdrawn: no answer needed", what, safetext.Name(ev.Peer.Name))
					ok, answered := answers.confirmCode(qctx, q, withdrawn)
					if qctx.Err() != nil && ctx.Err() == nil {
						return // withdrawn: the pairing ended, nothing to confirm
					}
					if !answered {
						// Nobody could say (not "the codes differ", which warns
						// the other side of someone in the middle): a pairing
						// is cancelled, a transfer goes on untrusted.
						if ev.Pair.Only {
							e.Cancel(ev.TransferID)
						}
						return
					}
					if err := e.ConfirmPair(ev.TransferID, ok); err != nil {
						fmt.Fprintf(errOut, "ferry-cli receive: %v\n", err)
					}
				}()
			case engine.EventResult:
				withdraw(ev.TransferID)
				if ev.Result.State != engine.StateDone {
					// A code still asked about is moot once its transfer
					// failed or was cancelled (by the other side's "the
					// codes differ", for one). One that arrived whole is
					// not: pairing goes on after its files, and a small
					// transfer ends before anyone can type an answer (its
					// question was withdrawn, and the device not paired).
					withdrawCode(ev.TransferID)
				}
				if *once && ev.Result.State == engine.StateInterrupted {
					// Not the end of the transfer: what arrived is kept and
					// the sender comes back with the rest (after a sleep, a
					// network change), as long as this receiver is there.
					fmt.Fprintf(errOut, "ferry-cli receive: waiting for %s to send the rest (Ctrl+C to stop: what arrived is kept for a later send)\n", safetext.Name(ev.Peer.Name))
					break
				}
				if *once {
					asking.Wait()
					if ev.Result.State != engine.StateDone {
						return exitError{code: 1, err: errors.New(ev.Result.Err)}
					}
					return nil
				}
			}
		}
	}
}

// tellSums closes the engine of a receive that stops and prints what it
// still had summed up (refusals waiting for their minute's end: offers
// refused unread, LocalSend PINs), which the engine tells as it closes;
// the transfers its closing ends are not printed, as before.
func tellSums(closeEngine func(), events <-chan engine.Event, p *printer) {
	closeEngine()
	for {
		select {
		case ev := <-events:
			if ev.Kind == engine.EventRefused || ev.Kind == engine.EventLocalSendPIN {
				p.event(ev)
			}
		default:
			p.flush()
			return
		}
	}
}

// stopped is how receive ends when Ctrl-C stops it: a receiver stopped is
// done (exit 0), but receive --once stopped before its transfer ended did
// not receive what it waited for (main makes that exit 130).
func stopped(once bool) error {
	if once {
		return errors.New("stopped before a transfer ended")
	}
	return nil
}

// keepForever maps the flag's 0 ("keep forever") to the engine's negative age.
func keepForever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// prompter asks the terminal user about offers, one at a time.
type prompter struct {
	in  *bufio.Reader
	out io.Writer
	sem chan struct{}

	start sync.Once
	lines chan inputLine // read by one goroutine, so that a question can stop waiting
	ended bool           // standard input ended (an inputLine with err came); sem held
}

// inputLine is a line of standard input, or its end.
type inputLine struct {
	s   string
	err error
}

func newPrompter(in io.Reader, out io.Writer) *prompter {
	return &prompter{in: bufio.NewReader(in), out: out, sem: make(chan struct{}, 1), lines: make(chan inputLine)}
}

// readLine waits for the next line of standard input, or ctx's end (the
// offer asked about was withdrawn: cancelled, or its sender went away),
// then err is ctx.Err(). Lines piped in ahead are answers in turn, as
// before. Called with sem held.
func (p *prompter) readLine(ctx context.Context) (line string, err error) {
	p.start.Do(func() {
		go func() {
			for {
				l, err := p.in.ReadString('\n')
				p.lines <- inputLine{l, err}
				if err != nil {
					return
				}
			}
		}()
	})
	if p.ended {
		return "", io.EOF
	}
	select {
	case l := <-p.lines:
		if l.err != nil {
			p.ended = true
			if l.s == "" {
				return "", l.err
			}
		}
		return l.s, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ask asks about an offer; confirm records the user's verdict on the
// sender's verification code, asked when the user wants to trust it.
// onScreen, when not nil, is told whether the offer waits behind another
// question (false) and when it is asked (true): its sender asks its user
// to compare codes only once the code is printed here.
func (p *prompter) ask(ctx context.Context, ev engine.Event, confirm func(match bool) error, onScreen func(shown bool)) engine.Decision {
	tell := func(shown bool) {
		if onScreen != nil {
			onScreen(shown)
		}
	}
	select {
	case p.sem <- struct{}{}:
	default:
		tell(false) // behind another question: nothing printed yet
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return engine.Decision{}
		}
	}
	defer func() { <-p.sem }()
	tell(true)
	o := ev.Offer
	trust := "new device"
	if ev.Peer.Trusted {
		trust = "trusted"
	}
	who := short(ev.Peer.ID)
	if ev.Peer.Protocol == engine.ProtocolLocalSend {
		trust = localSendWho(ev.Peer, trust)
		who = "" // the fingerprint says who it is, not its ID's first letters ("localsen")
	}
	if o.Text != "" {
		fmt.Fprintf(p.out, "\n%s (%s) wants to send a text:\n", safetext.Name(ev.Peer.Name), joinWho(who, trust))
		lines := strings.Split(safetext.Text(o.Text), "\n")
		for i, l := range lines {
			if i == maxPromptLines {
				fmt.Fprintf(p.out, "  ... and %d more lines (all of it is printed once accepted)\n", len(lines)-i)
				break
			}
			fmt.Fprintf(p.out, "  | %s\n", l)
		}
	}
	if o.Count > 0 || o.Text == "" {
		fmt.Fprintf(p.out, "\n%s (%s) wants to send %s, %s, into %s (%s free):\n",
			safetext.Name(ev.Peer.Name), joinWho(who, trust), numtext.Count(o.Count, "file"), humanBytes(o.TotalBytes), o.Dest, humanBytes(o.FreeBytes))
	}
	for _, l := range offerLines(o) {
		fmt.Fprintf(p.out, "  %s\n", l)
	}
	if o.PairCode != "" {
		fmt.Fprintf(p.out, "  verification code %s: [a]lways asks you to check that the sender's screen shows it\n", o.PairCode)
	}
	question, choices := "Accept? [y]es / [n]o / [a]lways from this device: ", []string{"y", "yes", "n", "no", "a", "always"}
	if o.PairCode == "" && !ev.Peer.Trusted {
		// Nothing here can make it trusted (a LocalSend device that proved
		// no key): "always" would not be kept.
		question, choices = "Accept? [y]es / [n]o: ", choices[:4]
	}
	answer, ok := p.choose(ctx, question, choices...)
	if !ok && ctx.Err() != nil {
		fmt.Fprintf(p.out, "\n(the offer from %s was withdrawn: no answer needed)\n", safetext.Name(ev.Peer.Name))
		return engine.Decision{}
	}
	if !ok {
		fmt.Fprintln(p.out, "no answer: standard input is closed, so the offer is declined (--accept all or --accept trusted receives without asking)")
		return engine.Decision{Reason: "the receiver could not be asked"}
	}
	switch answer {
	case "y", "yes":
		return engine.Decision{Accept: true}
	case "a", "always":
		if o.PairCode == "" { // trusted already
			return engine.Decision{Accept: true}
		}
		match := p.yes(ctx, fmt.Sprintf("Does the sender's screen show the code %s? [y/n]: ", o.PairCode))
		if err := confirm(match); err != nil || !match {
			return engine.Decision{Reason: "the verification codes did not match"}
		}
		return engine.Decision{Accept: true, AlwaysAccept: true}
	}
	return engine.Decision{Reason: "the receiver declined"}
}

// offerLines lists an offer's items for the prompt: each top-level folder
// with its files and bytes ("D/ (105,252 files, 1.6 GB)"), then the files
// outside them, maxOfferLines at most ("... and 3 more"), then each
// refused file with why, maxOfferLines at most. It listed the first ten
// files, so a folder of 105,252 showed ten of its files deep inside it
// and "... and 105242 more".
func offerLines(o *engine.OfferInfo) []string {
	var out []string
	inFolders := 0
	for _, f := range o.Folders {
		inFolders += f.Files
		if len(out) < maxOfferLines {
			out = append(out, fmt.Sprintf("%s/ (%s, %s)", safetext.Name(f.Path), numtext.Count(f.Files, "file"), humanBytes(f.Bytes)))
		}
	}
	var refused []string
	refusedLoose := 0
	for _, f := range o.Files {
		loose := !strings.Contains(f.Path, "/")
		if f.Refused != "" {
			refused = append(refused, fmt.Sprintf("%s (%s) REFUSED: %s", safetext.Name(f.Path), humanBytes(f.Size), f.Refused))
			if loose {
				refusedLoose++
			}
			continue
		}
		if loose && len(out) < maxOfferLines {
			out = append(out, fmt.Sprintf("%s (%s)", safetext.Name(f.Path), humanBytes(f.Size)))
		}
	}
	// The items not listed: folders past the first lines, and files outside
	// them (refused ones are listed below).
	if more := len(o.Folders) + o.Count - inFolders - refusedLoose - len(out); more > 0 {
		out = append(out, fmt.Sprintf("... and %s more", numtext.Group(more)))
	}
	for i, r := range refused {
		if i == maxOfferLines {
			out = append(out, fmt.Sprintf("... and %s more refused", numtext.Group(len(refused)-i)))
			break
		}
		out = append(out, r)
	}
	return out
}

// maxOfferLines bounds each list of offerLines.
const maxOfferLines = 10

// maxPromptLines bounds the lines of a text the prompt shows.
const maxPromptLines = 40

// joinWho is who a sender is: its short ID (none for LocalSend) and trust.
func joinWho(id, trust string) string {
	if id == "" {
		return trust
	}
	return id + ", " + trust
}

// short is a device's short ID, "PT27-TYCL", as the app shows it.
func short(id string) string { return deviceid.Short(id) }
