package engine

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/clock"
)

// TestFloodRefusalsAreCounted: in a flood of senders, each a new device,
// from a few addresses, at a receiver that asks (the user declines every
// offer shown), every sender is told of: by the result of its transfer
// (its offer was read: declined by the user, or busy) or by an
// EventRefused (refused before it was read: too many at once, an address
// muted, too many new devices), once. Those refused unread left no event,
// so the app's History counted 30 of a 48-offer flood.
func TestFloodRefusalsAreCounted(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk})
	events, unsub := recv.Subscribe(4096)
	defer unsub()
	const senders, addrs = 50, 5
	ids := map[string]bool{}
	// All connect at once, then say hello and offer: sessions wait for
	// their offers beyond what the receiver lets wait.
	var peers []*rawPeer
	for i := range senders {
		id := newIdentity(t)
		ids[id.ID.String()] = true
		p, _ := connectRawAs(t, recv, id, fmt.Sprintf("192.0.2.%d:%d", 10+i%addrs, 5000+i))
		peers = append(peers, p)
	}
	var answers []<-chan answer
	for _, p := range peers {
		ch := make(chan answer, 1)
		go func() {
			if err := p.hello(); err != nil {
				ch <- answer{err: err}
				return
			}
			p.offer(wire.FileEntry{Path: "a.txt", Size: 12})
			d, err := expect[*wire.Decision](p.ctl.recv())
			p.conn.Close(nil) // told: it hangs up, as a Ferry sender does (the receiver lingers for that)
			ch <- answer{d, err}
		}()
		answers = append(answers, ch)
	}
	told := map[string]string{} // device ID -> what told of it
	tell := func(id, how string) {
		t.Helper()
		if old, ok := told[id]; ok {
			t.Errorf("%s told twice: %s, then %s", id, old, how)
		}
		told[id] = how
	}
	reasons := map[RefusalReason]int{}
	answered := 0
	closed := false
	deadline := time.After(20 * time.Second)
	for len(told) < senders {
		select {
		case ev := <-events:
			switch {
			case ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting:
				if err := recv.Decide(ev.TransferID, Decision{}); err != nil { // the user says no
					t.Logf("decide: %v", err)
				}
			case ev.Kind == EventResult && ev.Direction == Receiving:
				tell(ev.Peer.ID, "result "+string(ev.Result.Code))
			case ev.Kind == EventRefused:
				r := ev.Refused
				if r.Count != len(r.Devices) || r.MoreDevices || r.First.IsZero() || r.Last.Before(r.First) {
					t.Fatalf("refusals %+v: each sender is a device of its own", r)
				}
				reasons[r.Reason] += r.Count
				for _, d := range r.Devices {
					tell(d.ID, "refused "+string(r.Reason))
				}
			}
		case <-answers[min(answered, senders-1)]:
			// Every sender heard its answer: the refusals were counted
			// before (those waiting for their minute are told on close).
			if answered++; answered == senders && !closed {
				closed = true
				recv.Close()
			}
		case <-deadline:
			for i, ch := range answers[answered:] {
				select {
				case a := <-ch:
					t.Logf("sender %d: %+v %v", answered+i, a.d, a.err)
				default:
					t.Logf("sender %d: no answer", answered+i)
				}
			}
			t.Fatalf("%d of %d senders told of (%v), %d answered", len(told), senders, reasons, answered)
		}
	}
	for id := range ids {
		if _, ok := told[id]; !ok {
			t.Errorf("sender %s not told of", id)
		}
	}
	if reasons[RefusedBusy] == 0 {
		t.Errorf("no sender refused as busy before its offer was read (%v): the flood does not test it", reasons)
	}
	t.Logf("refused unread: %v", reasons)
}

// TestRefusalsSummedUp: refusals of offers not read are told as
// EventRefused per address and reason: the first at once, those that
// follow within its minute summed up at the minute's end (a count, first
// and last times, each device once, the first maxRefusedDevices); a quiet
// minute forgets the address; what waits for its minute's end is told as
// the engine closes, the oldest first, and nothing after; a refusal that is
// none of the limits' is not counted.
func TestRefusalsSummedUp(t *testing.T) {
	type step struct {
		after time.Duration // the clock moves on by this first
		from  string
		dev   string // refused: from, by dev (named name), for r
		name  string
		r     *wire.RemoteError
		n     int // this many times, by dev, dev+"1", ... when many
		many  bool
		close bool
		want  []string // the events it tells, sorted
	}
	busy, muted := core.ErrReceiverBusy, core.ErrMutedAddress
	impersonation := &wire.RemoteError{Code: wire.CodeUntrusted, Reason: "paired with another device of the same name"}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"at once, then the minute's sum", []step{
			{from: "192.0.2.1:5000", dev: "D1", r: busy, want: []string{"192.0.2.1 busy 1 0-0 D1 peer=D1"}},
			{after: 10 * time.Second, from: "192.0.2.1:5001", dev: "D2", r: busy},
			{after: 20 * time.Second, from: "192.0.2.1:5002", dev: "D2", name: "Bob", r: busy},
			{after: 5 * time.Second, from: "192.0.2.1:5003", dev: "D1", r: busy},
			{after: 25 * time.Second, want: []string{"192.0.2.1 busy 3 10-35 D2=Bob,D1"}},
			{after: time.Minute}, // quiet: forgotten
			{after: time.Minute, from: "192.0.2.1:5004", dev: "D3", name: "Carol", r: busy, want: []string{"192.0.2.1 busy 1 180-180 D3=Carol peer=D3"}},
		}},
		{"addresses and reasons apart", []step{
			{from: "192.0.2.1:1", dev: "D1", r: busy, want: []string{"192.0.2.1 busy 1 0-0 D1 peer=D1"}},
			{from: "192.0.2.1:2", dev: "D2", r: muted, want: []string{"192.0.2.1 muted_address 1 0-0 D2 peer=D2"}},
			{from: "[2001:db8:1:2::7]:3", dev: "D3", r: busy, want: []string{"2001:db8:1:2::/64 busy 1 0-0 D3 peer=D3"}},
			{from: "[2001:db8:1:2::8]:3", dev: "D4", r: busy}, // the same /64
			{after: time.Minute, want: []string{"2001:db8:1:2::/64 busy 1 0-0 D4 peer=D4"}},
		}},
		{"devices bounded", []step{
			{from: "192.0.2.1:1", dev: "D", r: busy, want: []string{"192.0.2.1 busy 1 0-0 D peer=D"}},
			{from: "192.0.2.1:1", dev: "E", r: busy, n: maxRefusedDevices + 4, many: true},
			{after: time.Minute, want: []string{"192.0.2.1 busy 20 0-0 E0,E1,E2,E3,E4,E5,E6,E7,E8,E9,E10,E11,E12,E13,E14,E15 more"}},
		}},
		{"told on close, the oldest first, nothing after", []step{
			{from: "192.0.2.2:1", dev: "D2", r: muted, want: []string{"192.0.2.2 muted_address 1 0-0 D2 peer=D2"}},
			{after: time.Second, from: "192.0.2.1:1", dev: "D1", r: busy, want: []string{"192.0.2.1 busy 1 1-1 D1 peer=D1"}},
			{after: time.Second, from: "192.0.2.1:1", dev: "D1", r: busy},
			{after: time.Second, from: "192.0.2.2:1", dev: "D2", r: muted},
			{close: true, want: []string{"192.0.2.1 busy 1 2-2 D1 peer=D1", "192.0.2.2 muted_address 1 3-3 D2 peer=D2"}},
			{from: "192.0.2.1:1", dev: "D1", r: busy},
			{after: time.Minute},
		}},
		{"not a limit's refusal", []step{
			{from: "192.0.2.1:1", dev: "D1", r: impersonation},
			{after: time.Minute},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
			clk := clock.NewFake(t0)
			e := testEngine(t, Options{Clock: clk})
			events, unsub := e.Subscribe(1024)
			defer unsub()
			secs := func(at time.Time) int { return int(at.Sub(t0) / time.Second) }
			for i, s := range c.steps {
				if s.after > 0 {
					clk.Advance(s.after)
				}
				for k := range max(s.n, 1) {
					if s.r == nil {
						break
					}
					dev := s.dev
					if s.many {
						dev += strconv.Itoa(k)
					}
					e.refusals.refused(s.from, RefusedDevice{ID: dev, Name: s.name}, s.r)
				}
				if s.close {
					e.Close()
				}
				var got []string
				for len(got) < len(s.want) {
					select {
					case ev := <-events:
						if ev.Kind != EventRefused {
							continue
						}
						r := ev.Refused
						var devs []string
						for _, d := range r.Devices {
							if d.Name != "" {
								d.ID += "=" + d.Name
							}
							devs = append(devs, d.ID)
						}
						line := fmt.Sprintf("%s %s %d %d-%d %s", ev.Peer.Addr, r.Reason, r.Count, secs(r.First), secs(r.Last), strings.Join(devs, ","))
						if r.MoreDevices {
							line += " more"
						}
						if ev.Peer.ID != "" {
							line += " peer=" + ev.Peer.ID
						}
						got = append(got, line)
					case <-time.After(10 * time.Second):
						t.Fatalf("step %d: told %q, want %q", i, got, s.want)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d: told\n%q\nwant\n%q", i, got, s.want)
				}
				select { // nothing else (a late one fails the next step)
				case ev := <-events:
					if ev.Kind == EventRefused {
						t.Fatalf("step %d: told %+v too", i, ev.Refused)
					}
				default:
				}
			}
		})
	}
}

// TestRefusalsBounded: refusals from many addresses keep at most
// maxRefusedWatch addresses and reasons apart, and one for the rest per
// reason, however many come, and make at most one event a minute for each;
// every refusal is counted in one of them. Addresses whose minute passed
// quietly make room for new ones.
func TestRefusalsBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := testEngine(t, Options{Clock: clk})
	events, unsub := e.Subscribe(8192)
	defer unsub()
	const addrs, tries = 3 * maxRefusedWatch, 10 * 3 * maxRefusedWatch
	flood := func() {
		for i := range tries {
			a := i % addrs
			e.refusals.refused(fmt.Sprintf("10.0.%d.%d:5000", a/256, a%256), RefusedDevice{ID: strconv.Itoa(i)}, core.ErrReceiverBusy)
			if n := e.refusals.sums.len(); n > maxRefusedWatch+1 {
				t.Fatalf("%d addresses kept", n)
			}
		}
	}
	// told reads the events of one minute: one per address counted apart
	// and one for the others.
	told := func(what string) (n int) {
		t.Helper()
		seen := map[string]bool{}
		for range maxRefusedWatch + 1 {
			var ev Event
			for ev.Kind != EventRefused {
				select {
				case ev = <-events:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: %d told", what, len(seen))
				}
			}
			if seen[ev.Peer.Addr] {
				t.Fatalf("%s: %q told twice", what, ev.Peer.Addr)
			}
			seen[ev.Peer.Addr] = true
			n += ev.Refused.Count
		}
		if !seen[""] {
			t.Fatalf("%s: the others were not told", what)
		}
		return n
	}
	flood()
	first := told("at once") // the first of each
	clk.Advance(sumWindow)
	if rest := told("the first minute's end"); first+rest != tries {
		t.Fatalf("%d + %d refusals told, want %d", first, rest, tries)
	}
	flood()
	e.Close()
	if n := told("on close"); n != tries {
		t.Fatalf("%d refusals told, want %d", n, tries)
	}
	select {
	case ev := <-events:
		t.Fatalf("told %+v too", ev)
	default:
	}
}

// TestQuietAddressesMakeRoom: once the addresses counted apart passed a
// minute quietly, a new address is counted apart again, not with the
// others.
func TestQuietAddressesMakeRoom(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := testEngine(t, Options{Clock: clk})
	events, unsub := e.Subscribe(1024)
	defer unsub()
	for i := range maxRefusedWatch {
		e.refusals.refused(fmt.Sprintf("10.0.0.%d:1", i), RefusedDevice{ID: "D"}, core.ErrTooManyNew)
	}
	for range maxRefusedWatch {
		<-events
	}
	clk.Advance(sumWindow) // a quiet minute: the timers forget them, or the next refusal does
	e.refusals.refused("192.0.2.99:1", RefusedDevice{ID: "N"}, core.ErrTooManyNew)
	select {
	case ev := <-events:
		if ev.Peer.Addr != "192.0.2.99" || ev.Refused.Reason != RefusedNewDevices {
			t.Fatalf("the new address told as %q %+v", ev.Peer.Addr, ev.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new address was not told")
	}
}

// TestLocalSendRefusalsAreCounted: a LocalSend device whose offers the
// user declined twice is muted, and its next prepare-upload, refused
// before it is taken, is told as EventRefused (muted, the device and its
// protocol); it left no event.
func TestLocalSendRefusalsAreCounted(t *testing.T) {
	e, _, addr := lsEngine(t, Options{Accept: AcceptAsk}, LocalSendOptions{})
	events, unsub := e.Subscribe(256)
	defer unsub()
	c := lsFromAddr("127.0.3.1")
	for range core.StrikesToMute {
		st := make(chan int, 1)
		go func() {
			s, _ := lsOffer(t, c, addr, 1, 1)
			st <- s
		}()
		for ev := range events {
			if ev.Kind == EventOffer && ev.State == StateWaiting {
				if err := e.Decide(ev.TransferID, Decision{}); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if s := <-st; s != http.StatusForbidden {
			t.Fatalf("declined offer: %d", s)
		}
	}
	if s, _ := lsOffer(t, c, addr, 1, 1); s != http.StatusForbidden {
		t.Fatalf("muted offer: %d", s)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind != EventRefused {
				continue
			}
			if r := ev.Refused; r.Reason != RefusedMuted || r.Count != 1 || ev.Peer.Addr != "127.0.3.1" || ev.Peer.Protocol != ProtocolLocalSend ||
				ev.Peer.Name != "flood" || ev.Peer.ID == "" {
				t.Fatalf("told %+v %+v", ev.Peer, r)
			}
			return
		case <-deadline:
			t.Fatal("the muted LocalSend offer was not told")
		}
	}
}
