package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printer renders engine events: JSON lines, a progress bar on a terminal, or
// plain lines otherwise.
type printer struct {
	mu      sync.Mutex // guards out, held and lastBar
	out     io.Writer
	held    *bufio.Writer // out, when the output is held until flush (hold)
	json    bool
	bar     bool
	lastBar int
	// prefix, when set, starts every plain line (several recipients: which one).
	prefix func(engine.Event) string
	cur    engine.Event  // the event being printed (for prefix)
	enc    *json.Encoder // on out
	files  fileLines     // --json: file events, written without reflection
	// excerpt bounds each received text printed to an excerpt
	// (receive --accept all: nobody asked for it, and a flood of texts
	// would print each in full); --json prints every text whole.
	excerpt bool
	// connected holds the transfers that reached their peer once: a retry
	// of one is a reconnect, of the others another try.
	connected map[string]bool
	// coded holds the transfers whose verification code was said, and
	// the last code said.
	coded map[string]string
	// recoded holds the transfers that went on over a new connection with
	// a code of its own (a reconnect or Retry).
	recoded map[string]bool
	// ahead holds, per send queued by its receiving Ferry, the place in
	// that queue said last: a move up is said in a short line.
	ahead map[string]int
	// retries holds, per transfer, how often it was tried again and the
	// last reason printed.
	retries map[string]retryLine
	// newKey is the way on after a key change, with the new ID's %s
	// ("": send's, "send again with --id").
	newKey string
	// stalled holds the receiving transfers that said they are
	// interrupted while they go on (a LocalSend sender that stopped in the
	// middle of a file).
	stalled map[string]bool
	// pairing holds the sessions that pair and carry no files (pair, or
	// a pairing request received): their end is no transfer's.
	pairing map[string]bool
	// paused holds, per sending transfer that was paused (SIGUSR1), when
	// its pause began (zero once resumed: the next state it took said so)
	// and how long its earlier pauses lasted, which its done line leaves
	// out of the speed.
	paused map[string]*pauses
	// carried holds, per transfer, the transport its last transport line
	// named, and for a send that moved to another one with no retry (auto
	// moving the data from QUIC to TCP), the one it moved to.
	carried map[string]carriage
	// quietEvery, when set (several recipients, no bar), is how long a
	// transfer may go without a line of its own before its progress is
	// said in one (progressLine): a slow device otherwise shows nothing
	// until its done line. Times are the events' (the engine's clock).
	quietEvery time.Duration
	// said holds, per transfer under quietEvery, when its last line was
	// printed (or its first progress came).
	said map[string]time.Time
	// to, when set, is the "to" of every --json event (several
	// recipients: the --to it concerns; the peer is empty until reached).
	to func(engine.Event) string
}

// pauses is how long a transfer stood paused, by its events' times.
type pauses struct {
	since time.Time     // the pause under way began; zero when none is
	total time.Duration // the pauses before it
}

// carriage is the transport of a transfer, as its transport lines said it.
type carriage struct {
	last  string // the transport the last line named
	moved string // a send's transport it moved to without a retry ("" when none)
}

// resentBy is what made a transfer send bytes again, as the printer saw it
// (its done line says it).
type resentBy struct {
	reconnect bool   // a retry after the connection dropped
	moveTo    string // the transport a send moved to with no retry ("" when none)
}

type retryLine struct {
	n   int
	why string
	// back: the transport line since the last retry was said (a
	// transport line with none since is a change within the connection).
	back bool
}

func newPrinter(out io.Writer, asJSON bool) *printer {
	p := &printer{out: out, json: asJSON, bar: !asJSON && isTerminal(out)}
	p.enc = json.NewEncoder(out)
	return p
}

// hold keeps what the printer writes in a buffer until flush, for a
// receiver that prints a line per file: a write per file was a system call
// per file (not with a progress bar, which is drawn as it goes).
func (p *printer) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar || p.held != nil {
		return
	}
	p.held = bufio.NewWriterSize(p.out, 64<<10)
	p.out = p.held
	p.enc = json.NewEncoder(p.out)
}

// flush writes out what hold kept.
func (p *printer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		p.held.Flush()
	}
}

func (p *printer) event(ev engine.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		if p.to != nil {
			p.enc.Encode(struct {
				engine.Event
				To string `json:"to"`
			}{ev, p.to(ev)})
			return
		}
		if b, ok := p.files.line(ev); ok {
			p.out.Write(b)
			return
		}
		p.enc.Encode(ev)
		return
	}
	p.cur = ev
	switch ev.Kind {
	case engine.EventProgress:
		if p.bar {
			p.drawBar(ev.Progress)
		} else if p.quietEvery > 0 && !ev.Time.IsZero() {
			last, ok := p.said[ev.TransferID]
			switch {
			case !ok:
				if p.said == nil {
					p.said = map[string]time.Time{}
				}
				p.said[ev.TransferID] = ev.Time // under way: quiet from now
			case ev.Time.Sub(last) >= p.quietEvery:
				p.line("%s", progressLine(ev.Progress))
			}
		}
	case engine.EventState:
		if ps := p.paused[ev.TransferID]; ps != nil && !ps.since.IsZero() && ev.State != engine.StatePaused {
			ps.total += max(ev.Time.Sub(ps.since), 0)
			ps.since = time.Time{}
			p.line("resumed (SIGUSR1 pauses it again)")
		}
		switch ev.State {
		case engine.StatePaused:
			if p.paused == nil {
				p.paused = map[string]*pauses{}
			}
			ps := p.paused[ev.TransferID]
			if ps == nil {
				ps = &pauses{}
				p.paused[ev.TransferID] = ps
			}
			if ps.since.IsZero() {
				ps.since = ev.Time
			}
			p.line("paused (send SIGUSR1 again, or re-run the same command later, to resume)")
		case engine.StateInterrupted:
			// A transfer that goes on (an interrupted end is a result).
			if p.stalled == nil {
				p.stalled = map[string]bool{}
			}
			p.stalled[ev.TransferID] = true
			p.line("interrupted: nothing arrived from %s for a while; what arrived is kept, and the transfer goes on if it sends again (Ctrl-C ends it)",
				safetext.Name(ev.Peer.Name))
		case engine.StateActive:
			if p.stalled[ev.TransferID] {
				delete(p.stalled, ev.TransferID)
				p.line("%s is sending again", safetext.Name(ev.Peer.Name))
			}
		case engine.StateRetrying:
			again := "trying again" // it never reached the device
			if p.connected[ev.TransferID] {
				again = "reconnecting"
			}
			why := ""
			if ev.Result != nil {
				why = ev.Result.Err
				if ev.Result.Code == string(wire.CodeGoingAway) && why != "" {
					// Its Ferry was closed: nothing comes back until
					// someone opens it (a network would by itself).
					why = strings.TrimSuffix(why, ".") + "; waiting for it to be opened again."
				}
			}
			if p.retries == nil {
				p.retries = map[string]retryLine{}
			}
			last := p.retries[ev.TransferID]
			last.n++
			switch {
			case why != "" && why == last.why:
				// Said above: a receiver that is off would fill the
				// terminal with the same long sentence every few seconds.
				p.line("%s (attempt %d, as above)...", again, last.n+1)
			case why != "":
				p.line("%s: %s", again, shown(why)) // why, in the engine's sentence
			default:
				p.line("%s...", again)
			}
			last.why, last.back = why, false
			p.retries[ev.TransferID] = last
		}
	case engine.EventOffer:
		if s := ev.Offer.Skipped; ev.Direction == engine.Sending && s != nil {
			why := ""
			if s.Symlinks+s.Other > 0 {
				// What could not be read has its cause in its example, and
				// what LocalSend does not take says so.
				why = " (Ferry sends regular files and folders)"
			}
			p.line("not sent: %s%s: %s", s.Summary(), why, skippedExamples(s))
		}
		for _, r := range ev.Offer.Renamed {
			p.line("sent as %q: %s (another given path has its name)", r.As, r.Path)
		}
	case engine.EventPair:
		if ev.Pair.Only {
			if p.pairing == nil {
				p.pairing = map[string]bool{}
			}
			p.pairing[ev.TransferID] = true
			p.line("verification code %s: %s (%s) asks to pair; its screen shows the same code unless someone is in the middle",
				ev.Pair.Code, safetext.Name(ev.Peer.Name), short(ev.Peer.ID))
			break
		}
		who := fmt.Sprintf("%s (%s)", safetext.Name(ev.Peer.Name), short(ev.Peer.ID))
		if p.coded[ev.TransferID] == ev.Pair.Code {
			// The receiver said where the offer stands on its screen, or
			// its decision said whether its user saw the code said above:
			// only one it shows is there to compare.
			switch ev.Pair.Shown {
			case engine.CodeShownQueued:
				if n := ev.Pair.Ahead; n > 0 {
					offers := "offers"
					if n == 1 {
						offers = "offer"
					}
					if before, ok := p.ahead[ev.TransferID]; ok && n < before {
						p.line("verification code %s: your offer moved up on %s, now behind %d other %s", ev.Pair.Code, who, n, offers)
					} else {
						p.line("verification code %s: your offer is queued on %s behind %d other %s waiting for an answer; its screen shows the code once your offer's turn comes", ev.Pair.Code, who, n, offers)
					}
					if p.ahead == nil {
						p.ahead = map[string]int{}
					}
					p.ahead[ev.TransferID] = n
					break
				}
				delete(p.ahead, ev.TransferID)
				p.line("verification code %s: %s is answering another device's offer first; its screen shows the code once your offer's turn comes", ev.Pair.Code, who)
			case engine.CodeShownPending:
				p.line("verification code %s: %s shows your offer now, with this code", ev.Pair.Code, who)
			case engine.CodeShownNo:
				if p.recoded[ev.TransferID] {
					// It took this send before: any code it showed then
					// was the earlier connection's, not "none".
					p.line("verification code %s: %s went on with this send without asking, so its screen does not show this code (each connection has its own; ferry-cli pair compares codes)", ev.Pair.Code, who)
					break
				}
				p.line("verification code %s: %s accepted without showing it, so there is nothing to compare it with (ferry-cli pair compares codes)", ev.Pair.Code, who)
			case engine.CodeShownUnknown:
				p.line("verification code %s: %s runs an older Ferry, which does not say whether its screen showed the code", ev.Pair.Code, who)
			}
			break
		}
		again := ""
		if p.coded[ev.TransferID] != "" {
			// A reconnection is a new connection with a code of its own,
			// which the other screen shows anew too: said to be new, so a
			// second, different code is not taken for someone in the middle.
			again = " (a new connection, a new code)"
			if p.recoded == nil {
				p.recoded = map[string]bool{}
			}
			p.recoded[ev.TransferID] = true
		}
		if p.coded == nil {
			p.coded = map[string]string{}
		}
		p.coded[ev.TransferID] = ev.Pair.Code
		p.line("verification code %s%s: %s is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)",
			ev.Pair.Code, again, who)
		if ev.Pair.Shown == engine.CodeShownWaiting {
			p.line("  (it shows the code with your offer: compare once it does)")
		}
	case engine.EventKeyChanged:
		p.line("WARNING: %s", ev.KeyChange.Warning)
		// The app's warning has a Forget button; here the ways on are a
		// flag and a command.
		kc := ev.KeyChange
		if kc.Known.Addr != "" && kc.PresentedID != "" {
			way := p.newKey
			if way == "" {
				way = "send again with --id %s to send to the device with the new key"
			}
			p.line("  (with ferry-cli: "+way+")", kc.PresentedID)
		}
		if kc.Known.ID != "" {
			p.line("  (%s)", forgetWay(kc))
		}
	case engine.EventLocalSendPIN:
		p.line("%s", pinLine(ev))
	case engine.EventRefused:
		p.line("%s", refusedLine(ev))
	case engine.EventListener:
		// receive --anywhere: the relay gone for a while, or back
		// (once each way; the engine waits anywhere.ReachGrace).
		if st := ev.Listener; st.Transport == engine.RelayListener {
			if st.Err != "" {
				p.line("not reachable from anywhere for now: %s; paired devices reach this device through it again once it answers", shown(st.Err))
			} else {
				p.line("reachable from anywhere through relay %s again", st.Addr)
			}
		}
	case engine.EventTransport:
		if p.connected == nil {
			p.connected = map[string]bool{}
		}
		r := p.retries[ev.TransferID]
		if p.connected[ev.TransferID] && (ev.Direction == engine.Receiving || r.n > 0 && !r.back) {
			// Back after "reconnecting": said as that, not as a transfer
			// starting over. A sender's change on the same connection
			// (auto moving the data from QUIC to TCP, more flows) is no
			// reconnect: it had no retry since its last transport line.
			if r.n > 0 {
				r.back = true
				p.retries[ev.TransferID] = r
			}
			p.line("reconnected over %s (%s)%s", ev.Transport.Name, ev.Transport.Reason, receivedRoute(ev))
			break
		}
		if p.carried == nil {
			p.carried = map[string]carriage{}
		}
		c := p.carried[ev.TransferID]
		if p.connected[ev.TransferID] && ev.Direction == engine.Sending && c.last != "" && c.last != ev.Transport.Name {
			c.moved = ev.Transport.Name // what was in flight goes again over it
		}
		c.last = ev.Transport.Name
		p.carried[ev.TransferID] = c
		p.connected[ev.TransferID] = true
		p.line("transport: %s (%s)%s", ev.Transport.Name, ev.Transport.Reason, receivedRoute(ev))
	case engine.EventPath:
		pi := ev.Path
		who := "this device"
		if pi.Moved == "peer" {
			who = "the other device"
		}
		p.line("network changed (%s: %s -> %s, %s); continuing after a %.0f ms stall", who, pi.From, pi.To, pi.Reason, pi.StallMs)
	case engine.EventFile:
		f := ev.File
		switch {
		case !f.Verified:
			p.line("FAILED  %s: %s", safetext.Name(f.Path), shown(f.Err))
		case f.Kept && f.SavedAs != "" && !safetext.OnlyComposed(f.Path, f.SavedAs):
			p.line("ok      %s (here already as %s, the same bytes: kept, not saved twice)", safetext.Name(f.Path), safetext.Name(f.SavedAs))
		case f.Kept:
			p.line("ok      %s (here already, the same bytes: kept, not saved twice)", safetext.Name(f.Path))
		case safetext.OnlyComposed(f.Path, f.SavedAs):
			// A Mac's decomposed name saved composed (store.LocalName):
			// "saved as" the same letters would read as no change.
			p.line("ok      %s (saved with its accents composed, Unicode NFC)", safetext.Name(f.Path))
		case f.SavedAs != "":
			p.line("ok      %s (saved as %s)", safetext.Name(f.Path), safetext.Name(f.SavedAs))
		case !p.bar:
			p.line("ok      %s", safetext.Name(f.Path))
		}
	case engine.EventResult:
		r := ev.Result
		var paused time.Duration
		if ps := p.paused[ev.TransferID]; ps != nil {
			paused = ps.total
			if !ps.since.IsZero() { // ended while paused (Ctrl-C): its line says so
				paused += max(ev.Time.Sub(ps.since), 0)
			}
			delete(p.paused, ev.TransferID)
		}
		// The transfer's last event: what was kept of it goes (a receiver
		// runs for days).
		by := resentBy{reconnect: p.retries[ev.TransferID].n > 0, moveTo: p.carried[ev.TransferID].moved}
		delete(p.retries, ev.TransferID)
		delete(p.carried, ev.TransferID)
		delete(p.connected, ev.TransferID)
		delete(p.coded, ev.TransferID)
		delete(p.recoded, ev.TransferID)
		delete(p.ahead, ev.TransferID)
		delete(p.stalled, ev.TransferID)
		delete(p.said, ev.TransferID)
		if p.pairing[ev.TransferID] {
			// Not "done: 0 of 0 files verified": it carried none.
			delete(p.pairing, ev.TransferID)
			if r.State == engine.StateDone {
				p.line("paired with %s (%s): each device now trusts the other", safetext.Name(ev.Peer.Name), short(ev.Peer.ID))
			} else {
				p.line("pairing with %s ended: %s", safetext.Name(ev.Peer.Name), shown(r.Err))
			}
			break
		}
		if r.Text != "" && ev.Direction == engine.Receiving {
			// The peer's text, escaped so that nothing in it can disguise itself.
			text := safetext.Text(r.Text)
			if p.excerpt {
				text = excerpt(text)
			}
			p.line("text from %s:\n%s", safetext.Name(ev.Peer.Name), text)
		}
		if r.State == engine.StateDone && r.Files == 0 && r.Text != "" {
			p.line("done: text delivered")
		} else if r.State == engine.StateDone {
			p.line("done: %d of %d files verified%s, %s", r.Verified, r.Files, foldersMade(r.Folders), doneBytes(ev.Direction, r, paused, by))
			if r.Refused > 0 {
				p.line("refused: %d file(s) (FAILED above says why)", r.Refused)
			}
			if r.FoldersLeftOut > 0 {
				p.line("not sent: %s (the receiver's Ferry is older and does not take them)", emptyFolders(r.FoldersLeftOut))
			}
		} else if len(r.Err) >= len(r.State) && strings.EqualFold(r.Err[:len(r.State)], string(r.State)) {
			// "Interrupted — will resume when ...", "Declined by Bob.": not
			// "interrupted: Interrupted — ...", "declined: Declined by Bob."
			p.line("%s", shown(r.Err))
		} else {
			p.line("%s: %s", r.State, shown(r.Err))
		}
	}
}

// progressLine says how far a transfer is, for a transfer with no bar:
// "45 % (19.0 of 42.1 MB), 473.8 kB/s".
func progressLine(pr *engine.Progress) string {
	pct := 0.0
	if pr.TotalBytes > 0 {
		pct = float64(pr.Bytes) / float64(pr.TotalBytes) * 100
	}
	done, total := humanBytes(pr.Bytes), humanBytes(pr.TotalBytes)
	if i, j := strings.LastIndexByte(done, ' '), strings.LastIndexByte(total, ' '); done[i:] == total[j:] {
		done = done[:i] // "19.0 of 42.1 MB"
	}
	return fmt.Sprintf("%.0f %% (%s of %s), %s/s", pct, done, total, humanBytes(int64(pr.Rate)))
}

// foldersMade is the done line's word on the empty folders made besides
// the files.
func foldersMade(n int) string {
	if n == 0 {
		return ""
	}
	return " and " + emptyFolders(n) + " made"
}

func emptyFolders(n int) string {
	if n == 1 {
		return "1 empty folder"
	}
	return fmt.Sprintf("%d empty folders", n)
}

// doneBytes says how much a finished transfer delivered, how fast and
// over what, and what did not travel in it or travelled twice: what the
// receiver kept from an earlier session (resume; not in the speed) and
// what a reconnect sent again (chunks in flight when the connection broke).
// A send that was paused (SIGUSR1) for paused in all has that left out of
// its speed and said; what it sent again was sent after resuming, or after
// reconnecting and resuming when it reconnected too. A send says what it
// sent again after what it saw (by): a reconnect, a move to another
// transport, or neither (then no cause); a receiver's second session is a
// reconnect.
func doneBytes(dir engine.Direction, r *engine.Result, paused time.Duration, by resentBy) string {
	size := r.TotalBytes // the accepted files, each byte once
	if size == 0 {
		size = r.Bytes
	}
	s := humanBytes(size)
	if dir == engine.Receiving && r.Kept > 0 {
		s += fmt.Sprintf(" (%s of it kept from before)", humanBytes(r.Kept))
	}
	moved := max(size-r.Kept, 0)
	took, answer := r.Duration, ""
	if r.Waited >= answerShown && r.Waited < r.Duration {
		// The time a person took to accept is not the transfer's: the
		// speed is over the rest, and the wait is said apart.
		took -= r.Waited
		answer = fmt.Sprintf("the receiver answered after %.1fs", r.Waited)
		if dir == engine.Sending && r.Kept > 0 && r.Checked == 0 {
			// A receiver too old to say how long it checked what it
			// kept: that check is in the wait, and said to be.
			answer += ", its check of what it kept included"
		}
		if dir == engine.Receiving {
			answer = fmt.Sprintf("accepted after %.1fs", r.Waited)
		}
	}
	// Nor is the receiver's check of what it kept from before (resume),
	// which reads it back before the files move.
	checked := r.Checked >= answerShown && r.Checked < took
	if checked {
		took -= r.Checked
	}
	// Nor is a send's connecting (looking the device up, a call through
	// the relay: ICE and a remembered LAN address's head start), which
	// moved none of the files: on the LAN it is milliseconds, unsaid.
	var connect string
	if c := r.Connecting; dir == engine.Sending && c >= answerShown && c < took {
		took -= c
		connect = fmt.Sprintf("connected after %.1fs", c)
	}
	var pause string
	if p := paused.Seconds(); p > 0 && p < took {
		took -= p
		pause = fmt.Sprintf("paused for %.1fs", p)
	}
	s += fmt.Sprintf(" in %.2fs (%s/s) over %s", took, humanBytes(int64(float64(moved)/max(took, 1e-9))), r.Transport)
	var notes []string
	if connect != "" {
		notes = append(notes, connect)
	}
	if answer != "" {
		notes = append(notes, answer)
	}
	if pause != "" {
		notes = append(notes, pause)
	}
	switch {
	case dir == engine.Sending && r.Kept > 0 && checked:
		notes = append(notes, fmt.Sprintf("the receiver kept %s from before and took %.1fs to check it", humanBytes(r.Kept), r.Checked))
	case dir == engine.Sending && r.Kept > 0:
		notes = append(notes, fmt.Sprintf("the receiver kept %s from before", humanBytes(r.Kept)))
	case dir == engine.Sending && checked:
		notes = append(notes, fmt.Sprintf("the receiver took %.1fs to check what it kept from before", r.Checked))
	case checked:
		notes = append(notes, fmt.Sprintf("%.1fs checking what was kept from before", r.Checked))
	}
	if r.Packed > 0 {
		notes = append(notes, fmt.Sprintf("%s of it travelled compressed, as %s", humanBytes(r.Packed), humanBytes(r.PackedTo)))
	}
	again := r.Resent // the receiver's count: chunks that arrived twice
	if dir == engine.Sending {
		again = r.Bytes + r.Resent - moved // every payload byte written, less each one once
	}
	if again > 0 {
		after := " after reconnecting"
		switch {
		case pause != "" && by.reconnect:
			after = " after reconnecting and resuming"
		case pause != "":
			after = " after resuming"
		case dir == engine.Receiving || by.reconnect:
		case by.moveTo != "":
			after = " when the transfer moved to " + by.moveTo
		default:
			after = "" // neither seen: no cause made up
		}
		notes = append(notes, fmt.Sprintf("%s sent again%s", humanBytes(again), after))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

// answerShown is the shortest wait for the receiver's answer that the done
// line takes out of the transfer's time and says apart; a shorter one (a
// receiver that accepts by itself) stays in the time, unsaid.
const answerShown = 0.5

// A text's excerpt: its first lines, and no more bytes than this.
const (
	excerptLines = 10
	excerptBytes = 1024
)

// excerpt cuts an (escaped) text to its first excerptLines lines and
// excerptBytes bytes, on a rune boundary, and says how much it left out.
func excerpt(text string) string {
	cut := min(len(text), excerptBytes)
	for i, lines := 0, 0; i < cut; i++ {
		if text[i] == '\n' {
			if lines++; lines == excerptLines {
				cut = i
			}
		}
	}
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if cut >= len(text) {
		return text
	}
	return fmt.Sprintf("%s\n... and %d more bytes (receive with --accept ask or --json to read it all)", text[:cut], len(text)-cut)
}

// line prints a message, clearing the progress bar first.
func (p *printer) line(format string, args ...any) {
	if p.lastBar > 0 {
		fmt.Fprintf(p.out, "\r%s\r", strings.Repeat(" ", p.lastBar))
		p.lastBar = 0
	}
	if p.prefix != nil {
		fmt.Fprint(p.out, p.prefix(p.cur))
	}
	fmt.Fprintf(p.out, format+"\n", args...)
	if _, ok := p.said[p.cur.TransferID]; ok && !p.cur.Time.IsZero() {
		p.said[p.cur.TransferID] = p.cur.Time
	}
}

func (p *printer) drawBar(pr *engine.Progress) {
	const width = 30
	frac := 0.0
	if pr.TotalBytes > 0 {
		frac = float64(pr.Bytes) / float64(pr.TotalBytes)
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	s := fmt.Sprintf("\r[%s] %5.1f%% %9s/s  ETA %s  files %d/%d", bar, frac*100, humanBytes(int64(pr.Rate)),
		eta(pr.ETA), pr.Files, pr.TotalFiles)
	fmt.Fprint(p.out, s)
	p.lastBar = len(s)
}

func eta(sec float64) string {
	if sec <= 0 || sec > 1e6 {
		return "--:--"
	}
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// humanBytes formats n with SI units ("3.2 GB").
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// receivedRoute is how a receiving session came beyond the LAN, for its
// transport line ("" on the LAN; the sending side's reason says it).
func receivedRoute(ev engine.Event) string {
	if ev.Direction != engine.Receiving {
		return ""
	}
	switch t := ev.Transport; t.Route {
	case engine.RouteInternet:
		return ", through the internet (direct), found through relay " + t.Relay
	case engine.RouteRelayed:
		return ", relayed via " + t.Relay
	}
	return ""
}

// fileEventBatch is how long a printer lets file events gather before they
// are read (batcher): short enough that nobody sees the wait.
const fileEventBatch = 5 * time.Millisecond

// batcher prints the events of a subscription a batch at a time. File
// events come by the thousand in a tree of small files (on both sides): they
// are read a few milliseconds apart (the engine's subscription holds them
// meanwhile), so that the printer wakes up once per batch, not once per
// file, and a held printer writes each batch at once.
type batcher struct {
	p      *printer
	events <-chan engine.Event
	wait   *time.Timer
}

func newBatcher(p *printer, events <-chan engine.Event) *batcher {
	t := time.NewTimer(0)
	<-t.C
	return &batcher{p: p, events: events, wait: t}
}

// print prints ev, writes out what the printer holds unless more file
// events wait, and after a file event with none waiting lets the next ones
// gather. It returns false if ctx ended meanwhile.
func (b *batcher) print(ctx context.Context, ev engine.Event) bool {
	b.p.event(ev)
	if len(b.events) == 0 || ev.Kind != engine.EventFile {
		b.p.flush()
	}
	if ev.Kind == engine.EventFile && len(b.events) == 0 {
		b.wait.Reset(fileEventBatch)
		select {
		case <-b.wait.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// shown is a message on one line as the terminal may show it: the errors
// joined in it apart by "; ", and whatever a peer's words in it hold
// escaped (safetext.Line), so that nothing in them acts on the terminal.
func shown(msg string) string { return safetext.Message(msg) }

// skippedExamples lists the first few paths a send skipped (a file's name
// is its owner's words, escaped) and how many more there are.
func skippedExamples(s *engine.SkippedInfo) string {
	names := make([]string, len(s.Examples))
	for i, e := range s.Examples {
		names[i] = safetext.Name(e)
	}
	list := strings.Join(names, ", ")
	if more := s.Count() - len(s.Examples); more > 0 && len(s.Examples) > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

// forgetWay says the command that forgets the device whose key changed.
func forgetWay(kc *engine.KeyChange) string {
	return fmt.Sprintf("to forget the old device: ferry-cli devices --forget %s", short(kc.Known.ID))
}

// withForgetWay is a send's or a pairing's failure, which a key change
// caused when kc is not nil: the command that forgets the old device
// follows the engine's sentence ("... or forget the old device").
func withForgetWay(msg string, kc *engine.KeyChange) error {
	if kc == nil || kc.Known.ID == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("%s (%s)", msg, forgetWay(kc))
}

// refusedLine says what an EventRefused counts: offers this receiver's
// limits refused before reading them, "refused 17 offers from 192.0.2.7
// (16 devices and more) unread since 14:02:11: too many devices were
// offering at once"; the first from an address at once, the rest at most
// once a minute.
func refusedLine(ev engine.Event) string {
	r := ev.Refused
	what := "an offer"
	if r.Count != 1 {
		what = fmt.Sprintf("%d offers", r.Count)
	}
	var who string
	switch {
	case ev.Peer.ID != "":
		who = short(ev.Peer.ID)
		if ev.Peer.Name != "" {
			who = safetext.Name(ev.Peer.Name) + " (" + who + ")"
		}
		if ev.Peer.Protocol == engine.ProtocolLocalSend {
			who = "LocalSend " + who
		}
		if ev.Peer.Addr != "" {
			who += " at " + ev.Peer.Addr
		}
	case ev.Peer.Addr != "":
		who = ev.Peer.Addr
	default:
		who = "other addresses"
	}
	if ev.Peer.ID == "" && len(r.Devices) > 0 {
		more := ""
		if r.MoreDevices {
			more = " and more"
		}
		who += fmt.Sprintf(" (%d devices%s)", len(r.Devices), more)
	}
	line := "refused " + what + " from " + who + " unread"
	if r.Count > 1 {
		line += " since " + r.First.Local().Format("15:04:05")
	}
	return line + ": " + cmp.Or(refusedWhy[r.Reason], string(r.Reason))
}

// refusedWhy says why offers were refused unread (EventRefused).
var refusedWhy = map[engine.RefusalReason]string{
	engine.RefusedBusy:         "too many devices were offering at once",
	engine.RefusedNewDevices:   "too many new devices came from that address lately",
	engine.RefusedMuted:        "muted: offers from that device were declined a moment ago",
	engine.RefusedMutedAddress: "muted: offers from other new devices at that address were declined a moment ago",
	engine.RefusedLargeOffers:  "other large offers were held",
}
