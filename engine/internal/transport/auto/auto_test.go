package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/quic"
	"github.com/ferrydrop/ferry/engine/internal/transport/tcp"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
	"github.com/ferrydrop/ferry/internal/clock"
)

func TestMain(m *testing.M) { transporttest.Main(m) }

func TestRandomLoss(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		latest, min time.Duration
		want        bool
	}{
		{120 * ms, 120 * ms, true},
		{145 * ms, 120 * ms, true},             // within a quarter
		{170 * ms, 120 * ms, false},            // a 50 ms queue stood
		{2 * ms, 100 * time.Microsecond, true}, // loopback scheduling noise
		{30 * ms, 20 * ms, false},
	} {
		if got := randomLoss(tc.latest, tc.min, 2*ms); got != tc.want {
			t.Errorf("randomLoss(%v, %v) = %v", tc.latest, tc.min, got)
		}
	}
}

// fakeConn is a session a fake dial returns.
type fakeConn struct {
	transport.Conn // nil: only Close and Transport are used
	kind           transport.Kind
	closed         *atomic.Int32
	m              *transport.Metrics // nil: a 100 ms path, Cubic
}

func (f *fakeConn) Transport() transport.Kind { return f.kind }
func (f *fakeConn) Metrics() transport.Metrics {
	if f.m != nil {
		return *f.m
	}
	return transport.Metrics{SmoothedRTTms: 100, CongestionControl: "cubic"}
}
func (f *fakeConn) Close(error) error {
	f.closed.Add(1)
	return nil
}

// fakeEntry dials after delay (or fails with err, or waits for the
// context when delay < 0).
func fakeEntry(kind transport.Kind, prio int, delay time.Duration, err error, closed *atomic.Int32) Entry {
	return Entry{Kind: kind, Priority: prio, Dial: func(ctx context.Context, addr string, _ *tls.Config) (transport.Conn, error) {
		if delay < 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err != nil {
			return nil, err
		}
		return &fakeConn{kind: kind, closed: closed}, nil
	}}
}

// at is one address per entry of table, all on host.
func at(host string, table []Entry) []addr.Addr {
	var out []addr.Addr
	for _, e := range table {
		out = append(out, addr.New(e.Kind, host+":1"))
	}
	return out
}

func raceDial(ctx context.Context, l leg) (transport.Conn, error) {
	return l.entry.Dial(ctx, l.addr.HostPort(), nil)
}

func noTLS(string) *tls.Config { return nil }

func TestRaceBuckets(t *testing.T) {
	t.Parallel()
	errDown := errors.New("down")
	for _, tc := range []struct {
		name    string
		entries []Entry
		head    time.Duration
		want    transport.Kind
		losers  int32 // sessions that connected and were closed
	}{
		// The first bucket never answers: the second starts after its head start.
		{"head start", []Entry{fakeEntry("a", 0, -1, nil, nil), fakeEntry("b", 1, 0, nil, nil)}, 20 * time.Millisecond, "b", 0},
		// The first bucket failed: the second starts at once (an hour's head start is never waited).
		{"first failed", []Entry{fakeEntry("a", 0, 0, errDown, nil), fakeEntry("b", 1, 0, nil, nil)}, time.Hour, "b", 0},
		// Equal priorities dial together; the first to connect wins, the other is closed.
		{"same bucket", []Entry{fakeEntry("a", 0, 0, nil, nil), fakeEntry("b", 0, 0, nil, nil)}, time.Hour, "", 1},
		// Priority orders, not the order of the table.
		{"priority", []Entry{fakeEntry("b", 1, 0, nil, nil), fakeEntry("a", 0, 0, nil, nil)}, time.Hour, "a", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed atomic.Int32
			for i := range tc.entries {
				e := tc.entries[i]
				dial := e.Dial
				e.Dial = func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
					conn, err := dial(ctx, addr, c)
					if f, ok := conn.(*fakeConn); ok {
						f.closed = &closed
					}
					return conn, err
				}
				tc.entries[i] = e
			}
			r := newRace(t.Context(), legs(tc.entries, at("x", tc.entries), ""), tc.head, 0, nil, raceDial)
			var winner transport.Conn
			for winner == nil {
				res, ok := r.next(t.Context())
				if !ok {
					t.Fatal("no dial connected")
				}
				winner = res.conn
			}
			r.close()
			if tc.want != "" && winner.Transport() != tc.want {
				t.Errorf("%s won, want %s", winner.Transport(), tc.want)
			}
			if got := closed.Load(); got != tc.losers {
				t.Errorf("%d losers closed, want %d", got, tc.losers)
			}
		})
	}
}

// The next bucket starts when its head start has passed on the race's
// clock, not before: a blocked transport costs the head start, no more.
func TestRaceHeadStartFollowsTheClock(t *testing.T) {
	t.Parallel()
	const head = 200 * time.Millisecond
	fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var dialled, closed atomic.Int32
	b := fakeEntry("b", 1, 0, nil, &closed)
	dialB := b.Dial
	b.Dial = func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
		dialled.Add(1)
		return dialB(ctx, addr, c)
	}
	entries := []Entry{fakeEntry("a", 0, -1, nil, nil), b}
	r := newRace(t.Context(), legs(entries, at("x", entries), ""), head, 0, fake, raceDial)
	defer r.close()
	won := make(chan result, 1)
	go func() {
		res, _ := r.next(t.Context())
		won <- res
	}()
	if err := fake.WaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(head - time.Nanosecond)
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the second bucket dialled %d times before its head start passed", n)
	}
	fake.Advance(time.Nanosecond)
	res := <-won
	if res.err != nil || res.kind != "b" || dialled.Load() != 1 {
		t.Fatalf("after the head start: %+v, b dialled %d times", res, dialled.Load())
	}
	res.conn.Close(nil)
}

func TestErrorsStayLocalOnlyWhenAllAre(t *testing.T) {
	t.Parallel()
	local := &transport.LocalError{Err: errors.New("socket: too many open files")}
	var le *transport.LocalError
	if err := joinErrs([]error{tagged("quic", local), tagged("tcp", local)}); !errors.As(err, &le) {
		t.Errorf("every transport failed locally, but %v is not a LocalError", err)
	}
	if err := joinErrs([]error{tagged("quic", local), tagged("tcp", errors.New("connection refused"))}); errors.As(err, &le) {
		t.Errorf("TCP reached no peer, yet %v is a LocalError (it would never be retried)", err)
	}
	table := []Entry{fakeEntry("quic", 0, 0, local, nil), fakeEntry("tcp", 1, 0, local, nil)}
	if _, err := First(t.Context(), table, at("x", table), noTLS); !errors.As(err, &le) {
		t.Errorf("First: %v", err)
	}
}

// An attach names a running QUIC session and must come from its peer; the
// listener refuses anything else and keeps serving the session.
func TestAttach(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	reg := join.NewRegistry()
	srv := transporttest.Identity(t)
	ql, err := quic.Listen("127.0.0.1:0", srv.TLSConfig(true, nil), reg, transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ql.Close()
	tl, err := tcp.Listen("127.0.0.1:0", srv.TLSConfig(true, nil), reg, transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	owner := transporttest.Identity(t)
	q, err := quic.Dial(ctx, ql.Addr().String(), owner.TLSConfig(false, nil), transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(nil)
	if _, err := q.OpenStream(ctx); err != nil { // registers the session
		t.Fatal(err)
	}
	qs, err := ql.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close(nil)
	if _, err := qs.AcceptStream(ctx); err != nil { // the first stream
		t.Fatal(err)
	}
	token := q.Token()
	dialTCP := func(id *identity.Identity) *tcp.Session {
		c, err := tcp.Dial(ctx, tl.Addr().String(), id.TLSConfig(false, nil), transport.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(nil) })
		return c
	}
	for _, tc := range []struct {
		name  string
		id    *identity.Identity
		token join.Token
		want  error
	}{
		{"unknown token", owner, join.NewToken(), errcode.ErrUnknownSession},
		{"other device", transporttest.Identity(t), token, errcode.ErrPeerMismatch},
		{"the session's peer", owner, token, nil},
		{"a second attach", owner, token, errcode.ErrSessionFull},
	} {
		c := dialTCP(tc.id)
		err := c.Attach(ctx, tc.token)
		if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
			t.Fatalf("%s: attach: %v, want %v", tc.name, err, tc.want)
		}
		if err != nil {
			continue
		}
		// The QUIC session accepts the TCP session's streams now.
		st, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write([]byte("over tcp")); err != nil {
			t.Fatal(err)
		}
		st.Close()
		got, err := qs.AcceptStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := got.Read(buf); err != nil || string(buf) != "over tcp" {
			t.Fatalf("read %q, %v", buf, err)
		}
	}
	// Ending the QUIC session ends the TCP session that took its data.
	qs.Close(nil)
	select {
	case <-q.Done():
	case <-ctx.Done():
		t.Fatal("the QUIC session outlived its close")
	}
}

// A race against real listeners: TCP wins when QUIC has nobody listening.
func TestDialFallsBackToTCP(t *testing.T) {
	t.Parallel()
	srv := transporttest.Identity(t)
	tl, err := tcp.Listen("127.0.0.1:0", srv.TLSConfig(true, nil), join.NewRegistry(), transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	// A UDP port with nothing QUIC behind it.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	cfg := transport.Config{HeadStart: 10 * time.Millisecond}
	cli := transporttest.Identity(t)
	table := []Entry{
		{Kind: transport.QUIC, Priority: 0, Dial: func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
			return transport.AsConn(quic.Dial(ctx, addr, c, cfg))
		}},
		{Kind: transport.TCP, Priority: 1, Dial: func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
			return transport.AsConn(tcp.Dial(ctx, addr, c, cfg))
		}},
	}
	addrs := []addr.Addr{addr.New(transport.QUIC, pc.LocalAddr().String()), addr.New(transport.TCP, tl.Addr().String())}
	d, err := Dial(t.Context(), Request{Table: table, Addrs: addrs,
		TLS: func(string) *tls.Config { return cli.TLSConfig(false, nil) }, Config: cfg})
	c, why := d.Conn, d.Why
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	if c.Transport() != transport.TCP {
		t.Errorf("%s won (%s)", c.Transport(), why)
	}
}

// Where TCP cannot run BBR, a TCP session that won the race off a clean
// local link waits a little for QUIC (whose handshake may have lost a
// packet): QUIC takes the batch if it answers, else TCP keeps it.
func TestTCPWithoutBBRWaitsForQUIC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		quicDelay time.Duration
		want      transport.Kind
		why       string
	}{
		// QUIC answers 200 ms after its dial started: TCP's dial, which
		// starts at the 10 ms head start and answers at once, has 190 ms
		// to win the race first (with 30 ms a busy host let QUIC win
		// outright), and QUIC's answer comes well inside the 410 ms it is
		// then given.
		{"QUIC answers soon after", 200 * time.Millisecond, transport.QUIC, "answered"},
		{"QUIC never answers", -1, transport.TCP, "did not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed atomic.Int32
			table := []Entry{
				fakeEntry(transport.QUIC, 0, tc.quicDelay, nil, &closed),
				fakeEntry(transport.TCP, 1, 0, nil, &closed),
			}
			// Head start 10 ms, RTT 100 ms: QUIC gets until 10 + 4 x 100 ms after TCP.
			cfg := transport.Config{HeadStart: 10 * time.Millisecond, CleanRTT: -1}
			d, err := Dial(t.Context(), Request{Table: table, Addrs: at("x", table), TLS: noTLS, Config: cfg})
			c, why := d.Conn, d.Why
			if err != nil {
				t.Fatal(err)
			}
			if c.Transport() != tc.want || !strings.Contains(why, tc.why) || !strings.Contains(why, "cannot use BBR") {
				t.Errorf("%s: %s", c.Transport(), why)
			}
			if tc.want == transport.QUIC && closed.Load() != 1 {
				t.Errorf("%d sessions closed, want the TCP one", closed.Load())
			}
		})
	}
}

// Where TCP cannot run BBR and QUIC's handshake puts the path between
// CleanRTT and SwitchRTT, auto asks TCP's handshake, which user-space
// delays do not inflate, before it settles for QUIC: on a busy machine a
// 2 ms lab path read 7-19 ms in QUIC's one handshake sample, and auto
// carried a clean 1 Gbit/s transfer over QUIC at 240-370 Mbit/s, where TCP
// moved 560-790.
func TestAutoAsksTCPWhetherThePathIsShort(t *testing.T) {
	t.Parallel()
	rtt := func(srtt, min float64) *transport.Metrics {
		return &transport.Metrics{SmoothedRTTms: srtt, MinRTTms: min, CongestionControl: "cubic"}
	}
	for _, tc := range []struct {
		name      string
		quic, tcp *transport.Metrics
		tcpDelay  time.Duration
		want      transport.Kind
		dialled   int32 // TCP dials
	}{
		{"QUIC's handshake read a busy machine", rtt(15, 15), rtt(2.5, 2), 0, transport.TCP, 1},
		{"QUIC's minimum says it already", rtt(15, 3), rtt(2.5, 2), 0, transport.TCP, 1},
		{"a 15 ms path", rtt(15, 15), rtt(15, 15), 0, transport.QUIC, 1},
		{"TCP's TLS handshake is slow on a busy machine", rtt(15, 15), rtt(2.5, 2), 60 * time.Millisecond, transport.TCP, 1},
		{"TCP does not answer in time", rtt(15, 15), rtt(2.5, 2), time.Second, transport.QUIC, 1},
		{"a long path: QUIC at once", rtt(80, 80), rtt(2.5, 2), 0, transport.QUIC, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed, dialled atomic.Int32
			metered := func(e Entry, m *transport.Metrics, count *atomic.Int32) Entry {
				dial := e.Dial
				e.Dial = func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
					if count != nil {
						count.Add(1)
					}
					conn, err := dial(ctx, addr, c)
					if f, ok := conn.(*fakeConn); ok {
						f.m = m
					}
					return conn, err
				}
				return e
			}
			// TCP's delay and auto's wait for it run on a fake clock: the
			// window is checkSlack, 50 ms, which a busy host's scheduling
			// overran on the real one.
			fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			tcpEntry := fakeEntry(transport.TCP, 1, 0, nil, &closed)
			dialing := make(chan struct{}, 1)
			if tc.tcpDelay > 0 {
				dial := tcpEntry.Dial
				tcpEntry.Dial = func(ctx context.Context, addr string, c *tls.Config) (transport.Conn, error) {
					timer, due := fake.NewTimer(tc.tcpDelay)
					defer timer.Stop()
					dialing <- struct{}{}
					select {
					case <-due:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return dial(ctx, addr, c)
				}
			}
			table := []Entry{
				metered(fakeEntry(transport.QUIC, 0, 0, nil, &closed), tc.quic, nil),
				metered(tcpEntry, tc.tcp, &dialled),
			}
			// TCP dials only when auto asks for it.
			cfg := transport.Config{HeadStart: time.Hour, Clock: fake}
			type outcome struct {
				d   Dialled
				err error
			}
			res := make(chan outcome, 1)
			go func() {
				d, err := Dial(t.Context(), Request{Table: table, Addrs: at("x", table), TLS: noTLS, Config: cfg})
				res <- outcome{d, err}
			}()
			if tc.tcpDelay > 0 {
				// auto's wait (three of QUIC's round trips and checkSlack)
				// was armed before TCP's dial began: move the clock to
				// whichever ends first, so that only one of them fires. A
				// wait too short for a TCP of 60 ms ends first, and QUIC
				// keeps the batch: the case fails. No busy machine moves
				// either: the run is the case every time (this replaces a
				// skip of runs whose TCP came back late on the real clock).
				<-dialing
				wait := 3*time.Duration(tc.quic.SmoothedRTTms*float64(time.Millisecond)) + checkSlack
				fake.Advance(min(tc.tcpDelay, wait))
			}
			r := <-res
			d, err := r.d, r.err
			if err != nil {
				t.Fatal(err)
			}
			defer d.Conn.Close(nil)
			if d.Conn.Transport() != tc.want {
				t.Errorf("%s carries the batch (%s), want %s", d.Conn.Transport(), d.Why, tc.want)
			}
			if got := dialled.Load(); got != tc.dialled {
				t.Errorf("TCP dialled %d times, want %d", got, tc.dialled)
			}
			if tc.dialled == 1 && tc.tcpDelay < time.Second && closed.Load() != 1 {
				t.Errorf("%d sessions closed, want the one not taken", closed.Load())
			}
		})
	}
}
