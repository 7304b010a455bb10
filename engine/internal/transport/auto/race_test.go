package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// behave is what a fake dial to one host does: connect after delay (or
// wait for its context when delay < 0), or fail with err.
type behave struct {
	delay time.Duration
	err   error
}

// hostEntry is a table row whose dials behave as by says for their host.
func hostEntry(kind transport.Kind, prio int, by map[string]behave, closed *atomic.Int32, dialled *atomic.Int32) Entry {
	return Entry{Kind: kind, Priority: prio, Dial: func(ctx context.Context, hp string, _ *tls.Config) (transport.Conn, error) {
		if dialled != nil {
			dialled.Add(1)
		}
		host, _, _ := net.SplitHostPort(hp)
		b := by[host]
		if b.delay < 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if b.delay > 0 {
			select {
			case <-time.After(b.delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if b.err != nil {
			return nil, b.err
		}
		return &fakeConn{kind: kind, closed: closed}, nil
	}}
}

func TestLegsGroupByHost(t *testing.T) {
	t.Parallel()
	table := []Entry{{Kind: transport.QUIC, Priority: 0}, {Kind: transport.TCP, Priority: 1}}
	as := []addr.Addr{
		addr.New(transport.QUIC, "a:1"), addr.New(transport.TCP, "a:2"), addr.New(transport.QUIC, "b:1"),
		addr.New(transport.QUIC, "a:1"), // again: once is enough
		addr.New(transport.QUIC, "a:3"), // a has QUIC already: a place of its own
		addr.New(transport.TCP, "[2001:db8::1]:4"),
		{Kind: "localsend", URI: "https://a:53317"}, // not in the table
		addr.New(transport.TCP, "b:5"),
	}
	type want struct {
		place int
		uri   string
	}
	got := func(only transport.Kind) []want {
		var out []want
		for _, l := range legs(table, as, only) {
			out = append(out, want{l.place, l.addr.URI})
		}
		return out
	}
	all := []want{{0, "quic://a:1"}, {0, "tcp://a:2"}, {1, "quic://b:1"}, {1, "tcp://b:5"}, {2, "quic://a:3"}, {3, "tcp://[2001:db8::1]:4"}}
	if g := got(""); !slices.Equal(g, all) {
		t.Errorf("legs = %v, want %v", g, all)
	}
	tcpOnly := []want{{0, "tcp://a:2"}, {1, "tcp://[2001:db8::1]:4"}, {2, "tcp://b:5"}}
	if g := got(transport.TCP); !slices.Equal(g, tcpOnly) {
		t.Errorf("legs(tcp) = %v, want %v", g, tcpOnly)
	}
}

// The places of one race: staggered, the next at once when one failed or
// proved to be another device, the first to connect deciding the place
// and the others' sessions closed.
func TestRacePlaces(t *testing.T) {
	t.Parallel()
	errDown := errors.New("down")
	wrong := &identity.MismatchError{}
	errHandshake := errors.New("handshake failed") // QUIC's message-only report of a refused key
	for _, tc := range []struct {
		name    string
		by      map[string]behave
		hosts   []string
		stagger time.Duration
		refused string // the host Refused names
		wantAt  string // the host that wins; "" when Dial fails
		wantErr error
		losers  int32 // sessions that connected and were closed
	}{
		// The first place never answers: the second starts after its stagger.
		{"stagger", map[string]behave{"a": {delay: -1}, "b": {}}, []string{"a", "b"}, 20 * time.Millisecond, "", "b", nil, 0},
		// The first place failed: the second starts at once (an hour's stagger is never waited).
		{"first failed", map[string]behave{"a": {err: errDown}, "b": {}}, []string{"a", "b"}, time.Hour, "", "b", nil, 0},
		// Another device answers at the first place: it is dropped, the next dialled at once.
		{"wrong device", map[string]behave{"a": {err: wrong}, "b": {}}, []string{"a", "b"}, time.Hour, "", "b", nil, 0},
		{"refused by the TLS check", map[string]behave{"a": {err: errHandshake}, "b": {}}, []string{"a", "b"}, time.Hour, "a", "b", nil, 0},
		// Everywhere another device: that is the answer.
		{"wrong everywhere", map[string]behave{"a": {err: wrong}, "b": {err: wrong}}, []string{"a", "b"}, time.Hour, "", "", wrong, 0},
		{"down everywhere", map[string]behave{"a": {err: errDown}, "b": {err: errDown}}, []string{"a", "b"}, time.Hour, "", "", errDown, 0},
		// Both places dialled at once and both connect: one wins, the other's session is closed.
		{"two connect", map[string]behave{"a": {}, "b": {}}, []string{"a", "b"}, 0, "", "?", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed, dialled atomic.Int32
			// An hour's head start: only QUIC dials, unless a place's QUIC failed.
			table := []Entry{
				hostEntry(transport.QUIC, 0, tc.by, &closed, &dialled),
				hostEntry(transport.TCP, 1, tc.by, &closed, &dialled),
			}
			var as []addr.Addr
			for _, h := range tc.hosts {
				as = append(as, at(h, table)...)
			}
			req := Request{Table: table, Addrs: as, Stagger: tc.stagger, TLS: noTLS,
				Config: transport.Config{HeadStart: time.Hour, CleanRTT: -1}}
			if tc.refused != "" {
				req.Refused = func(hp string) error {
					if h, _, _ := net.SplitHostPort(hp); h == tc.refused {
						return wrong
					}
					return nil
				}
			}
			d, err := Dial(t.Context(), req)
			switch {
			case tc.wantAt == "" && !errors.Is(err, tc.wantErr):
				t.Fatalf("Dial: %v, want %v", err, tc.wantErr)
			case tc.wantAt == "":
				return
			case err != nil:
				t.Fatal(err)
			}
			defer d.Conn.Close(nil)
			if tc.wantAt != "?" && d.At.Host() != tc.wantAt {
				t.Errorf("reached %s, want host %s", d.At, tc.wantAt)
			}
			if d.At.Kind != d.Conn.Transport() {
				t.Errorf("reached %s over %s", d.At, d.Conn.Transport())
			}
			if got := closed.Load(); got != tc.losers {
				t.Errorf("%d losers closed, want %d", got, tc.losers)
			}
		})
	}
}

// A device known by its TCP address alone, with another device on the
// default port of the same host (a second Ferry there, or one that took
// the port since): the two addresses share a place (one host, one address
// per kind), and the other device's answer at its port takes that port
// out of the race, not the device's own TCP address. It was dropped with
// the place: "other devices answer at the 3 addresses it was known at".
func TestWrongDeviceAtAnotherPortOfTheHost(t *testing.T) {
	t.Parallel()
	wrong := &identity.MismatchError{}
	errDown := errors.New("connection refused")
	for _, tc := range []struct {
		name    string
		mine    error // what the device's own address does
		wantAt  string
		wantErr error
	}{
		{"the device answers", nil, "tcp://h:5000", nil},
		{"the device is down", errDown, "", errDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed atomic.Int32
			dial := func(kind transport.Kind) func(ctx context.Context, hp string, _ *tls.Config) (transport.Conn, error) {
				return func(ctx context.Context, hp string, _ *tls.Config) (transport.Conn, error) {
					switch {
					case hp == "h:47800":
						return nil, wrong
					case tc.mine != nil:
						return nil, tc.mine
					}
					return &fakeConn{kind: kind, closed: &closed}, nil
				}
			}
			table := []Entry{{Kind: transport.QUIC, Priority: 0, Dial: dial(transport.QUIC)}, {Kind: transport.TCP, Priority: 1, Dial: dial(transport.TCP)}}
			as := []addr.Addr{addr.New(transport.TCP, "h:5000"), addr.New(transport.QUIC, "h:47800"), addr.New(transport.TCP, "h:47800")}
			d, err := Dial(t.Context(), Request{Table: table, Addrs: as, Stagger: time.Hour, TLS: noTLS,
				Config: transport.Config{HeadStart: time.Hour, CleanRTT: -1}})
			if tc.wantAt == "" {
				var mm *identity.MismatchError
				if !errors.Is(err, tc.wantErr) || errors.As(err, &mm) {
					t.Fatalf("Dial: %v, want the device's own failure %v and not the other device's", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Conn.Close(nil)
			if d.At.URI != tc.wantAt {
				t.Errorf("reached %s, want %s", d.At, tc.wantAt)
			}
		})
	}
}

// Once a place won, auto waits for TCP at that place only: the TCP dial
// of another place is not the one it takes.
func TestWaitTakesTheWinningPlace(t *testing.T) {
	t.Parallel()
	var closed atomic.Int32
	by := map[string]behave{"a": {}, "b": {delay: -1}}
	table := []Entry{hostEntry(transport.QUIC, 0, by, &closed, nil), hostEntry(transport.TCP, 1, by, &closed, nil)}
	as := append(at("b", table), at("a", table)...)
	r := newRace(t.Context(), legs(table, as, ""), time.Hour, 0, nil, raceDial) // TCP starts when waited for
	defer r.close()
	var won result
	for won.conn == nil {
		res, ok := r.next(t.Context())
		if !ok {
			t.Fatal("nothing connected")
		}
		won = res
	}
	if r.places[won.place].buckets[0][0].addr.Host() != "a" {
		t.Fatalf("place %d won", won.place)
	}
	r.settle(won.place)
	c, err := r.wait(t.Context(), transport.TCP)
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport() != transport.TCP {
		t.Errorf("waited for %s", c.Transport())
	}
	won.conn.Close(nil)
	c.Close(nil)
}
