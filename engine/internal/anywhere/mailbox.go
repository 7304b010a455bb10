package anywhere

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The mailbox's protocol, plain HTTP on the relay's TCP port (the TURN
// server has the same port number on UDP). Everything it carries is
// sealed (Seal), so TLS would add nothing but a certificate to manage.
//
//	PUT  /v1/slot/NAME    body: one blob; replaces what NAME holds (presence)
//	POST /v1/slots        body: names, one a line; the blobs they hold (kept)
//	POST /v1/queue/NAME   body: one blob; appended to NAME's queue (calls, answers)
//	POST /v1/queues       body: names, one a line; the blobs queued (taken)
//	POST /v1/wait         as /v1/queues, but when nothing is queued the relay
//	                      holds the request up to WaitFor for a blob to come
//	                      (a long poll: a call is answered as it arrives, and
//	                      an idle receiver asks every few seconds, not twice a
//	                      second); a relay without it answers 404 (ErrNoWait)
//
// A reply to /v1/slots from a relay that notes looks carries
// HeaderUnwatched: for each name of the request, for how long at least
// no one took or waited for what it holds (a caller asks it of the call
// box its call would go to: a receiver alive always has a wait held
// there, or is between two). An older relay leaves it out.
//
// A reply with blobs is records of one byte (the name's index in the
// request), two bytes big-endian (the blob's length), and the blob.
const (
	PathSlot   = "/v1/slot/"
	PathSlots  = "/v1/slots"
	PathQueue  = "/v1/queue/"
	PathQueues = "/v1/queues"
	PathWait   = "/v1/wait"
)

// HeaderUnwatched is the reply header of /v1/slots that says, for each
// name of the request in its order, the milliseconds for which at least
// no one looked at the name (took or waited for its blobs), followed by
// "d" when that last look was a wait whose client went away while the
// relay held it (its connection closed: a process killed, whose system
// closes its connections), comma separated ("0,42000,1200d").
const HeaderUnwatched = "Ferry-Unwatched"

// Unwatched is what a relay says of one name (HeaderUnwatched).
type Unwatched struct {
	// For is how long at least no one looked at the name.
	For time.Duration
	// Dropped: the last look was a wait whose client went away.
	Dropped bool
}

// maxUnwatched bounds a value of HeaderUnwatched a client takes: a day
// (a relay remembers looks for a minute).
const maxUnwatched = 24 * time.Hour

// FormatUnwatched is the HeaderUnwatched value for us.
func FormatUnwatched(us []Unwatched) string {
	b := make([]byte, 0, 5*len(us))
	for i, u := range us {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, max(int64(u.For/time.Millisecond), 0), 10)
		if u.Dropped {
			b = append(b, 'd')
		}
	}
	return string(b)
}

// ParseUnwatched reads a HeaderUnwatched value (the relay's) for a
// request of n names: nil for none (an older relay), or an error for a
// value that is not n whole numbers of milliseconds up to a day, each
// with "d" or nothing after it.
func ParseUnwatched(v string, n int) ([]Unwatched, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > n*10 {
		return nil, fmt.Errorf("%w: %s of %d bytes", ErrBadReply, HeaderUnwatched, len(v))
	}
	parts := strings.Split(v, ",")
	if len(parts) != n {
		return nil, fmt.Errorf("%w: %s has %d values for %d names", ErrBadReply, HeaderUnwatched, len(parts), n)
	}
	out := make([]Unwatched, n)
	for i, p := range parts {
		num, dropped := strings.CutSuffix(p, "d")
		if num == "" || len(num) > 8 || strings.TrimLeft(num, "0123456789") != "" {
			return nil, fmt.Errorf("%w: %s value %.10q", ErrBadReply, HeaderUnwatched, p)
		}
		ms, _ := strconv.Atoi(num)
		d := time.Duration(ms) * time.Millisecond
		if d > maxUnwatched {
			return nil, fmt.Errorf("%w: %s value %s over a day", ErrBadReply, HeaderUnwatched, p)
		}
		out[i] = Unwatched{For: d, Dropped: dropped}
	}
	return out, nil
}

// WaitFor is how long a relay holds a wait that finds nothing queued:
// below the client's mailboxTimeout, with room for a slow path's round
// trips, and below the relay's write timeout.
const WaitFor = 3 * time.Second

// ErrNoWait means the relay does not hold waits (an older relay): poll
// with Take.
var ErrNoWait = errors.New("the relay does not hold waits")

// Bounds of the mailbox protocol, shared by the server and its clients.
const (
	// NameLen is the length of a name: 32 hex digits (rendezvous.Name).
	NameLen = 32
	// MaxNames bounds the names of one request.
	MaxNames = 48
	// MaxQueue bounds the blobs one queue holds.
	MaxQueue = 8
)

// MaxReply bounds a reply with blobs.
const MaxReply = MaxNames * MaxQueue * (3 + MaxBlob)

// ErrRelayUnreachable marks a relay that could not be reached at all.
var ErrRelayUnreachable = errors.New("relay unreachable")

// ErrRelayRefused marks a relay that answered but refused the request.
var ErrRelayRefused = errors.New("relay refused the request")

// RefusedError is a relay's refusal of a request (ErrRelayRefused): its
// HTTP status and the first line of its reason.
type RefusedError struct {
	Status int    // 400, 413 or 429
	Reason string // the relay's words, "" when it gave none
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: %d %s (%s)", ErrRelayRefused, e.Status, http.StatusText(e.Status), e.Reason)
}

func (e *RefusedError) Unwrap() error { return ErrRelayRefused }

// notHTTPError is ErrNotRelay for an answer in another protocol than
// HTTP. The HTTP client's words on it ('malformed HTTP response
// "SSH-2.0-..."', 'readLoopPeekFailLocked: <nil>') stay behind it for the
// log, out of the sentence.
type notHTTPError struct{ err error }

func (e *notHTTPError) Error() string   { return ErrNotRelay.Error() + ": it answers, but not in HTTP" }
func (e *notHTTPError) Unwrap() []error { return []error{ErrNotRelay, e.err} }

// ErrBadReply marks a reply that is not the protocol's.
var ErrBadReply = errors.New("bad reply from the relay")

// ErrNotRelay marks a server that answered at the relay's address, but
// not as a Ferry relay does: another service (a web server, an echo), or
// the wrong port. A bad reply (ErrBadReply) is one too.
var ErrNotRelay = errors.New("not a Ferry relay")

// CheckName checks a name: NameLen lowercase hex digits.
func CheckName(name string) error {
	if len(name) != NameLen || !isHex(name) {
		return fmt.Errorf("bad rendezvous name %.40q", name)
	}
	return nil
}

// EncodeNames is the body of a request for names.
func EncodeNames(names []string) []byte { return []byte(strings.Join(names, "\n")) }

// DecodeNames reads the body of a request for names.
func DecodeNames(b []byte) ([]string, error) {
	if len(b) == 0 {
		return nil, errors.New("no names")
	}
	if len(b) > MaxNames*(NameLen+1) {
		return nil, fmt.Errorf("over %d names", MaxNames)
	}
	names := strings.Split(string(b), "\n")
	if len(names) > MaxNames {
		return nil, fmt.Errorf("%d names, over %d", len(names), MaxNames)
	}
	for _, n := range names {
		if err := CheckName(n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// AppendRecord appends one record of a reply.
func AppendRecord(dst []byte, index int, blob []byte) []byte {
	dst = append(dst, byte(index))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(blob)))
	return append(dst, blob...)
}

// DecodeRecords reads a reply for n names: the blobs of each name, by index.
func DecodeRecords(b []byte, n int) ([][][]byte, error) {
	if len(b) > MaxReply {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadReply, len(b))
	}
	out := make([][][]byte, n)
	count := 0
	for len(b) > 0 {
		if len(b) < 3 {
			return nil, fmt.Errorf("%w: truncated record", ErrBadReply)
		}
		i, l := int(b[0]), int(binary.BigEndian.Uint16(b[1:3]))
		b = b[3:]
		if i >= n || l == 0 || l > MaxBlob || l > len(b) {
			return nil, fmt.Errorf("%w: record %d of %d bytes", ErrBadReply, i, l)
		}
		if count++; count > n*MaxQueue {
			return nil, fmt.Errorf("%w: too many records", ErrBadReply)
		}
		out[i] = append(out[i], bytes.Clone(b[:l]))
		b = b[l:]
	}
	return out, nil
}

// Mailbox is a client of a relay's mailbox.
type Mailbox struct {
	relay  string // host:port
	secret string // the relay secret ("" when the relay has none)
	http   *http.Client
}

// mailboxTimeout bounds one request: a relay that does not answer within
// it is reported, not waited for.
const mailboxTimeout = 5 * time.Second

// NewMailbox returns a client of the mailbox at relay ("host:port"),
// which signs its requests with secret, the relay secret ("": none).
func NewMailbox(relay, secret string) *Mailbox {
	return newMailbox(relay, secret, (&net.Dialer{Timeout: mailboxTimeout}).DialContext)
}

// newMailbox is NewMailbox with the dialer of its connections.
func newMailbox(relay, secret string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Mailbox {
	askedDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &askedConn{Conn: c, asked: make(chan struct{})}, nil
	}
	return &Mailbox{relay: relay, secret: secret, http: &http.Client{
		Timeout:   mailboxTimeout,
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second, DialContext: askedDial},
	}}
}

// errSpokeUnasked is what an askedConn reads of a server that spoke
// before it was asked anything.
var errSpokeUnasked = errors.New("the server spoke before it was asked")

// askedConn is a connection to a relay on which what the server says
// before the first request is written is an error, not bytes. net/http
// reads each connection from the moment it is dialled, and bytes that
// come while no request is out on it it writes to the process's standard
// logger ('Unsolicited response received on idle HTTP channel starting
// with "SSH-2.0-OpenSSH_9.2\r\n"; err=<nil>'): a server that speaks first
// (SSH) on a connection whose request was cancelled while it was dialled
// (it goes to the idle pool unused: presence and a wait run together, and
// one's failure cancels the other), or before the request that dialled it
// is written. A relay, HTTP, never speaks first; an end of the connection
// (EOF, a reset) still reads as it is, so a relay that closed an unused
// connection is seen to, as before.
type askedConn struct {
	net.Conn
	asked chan struct{} // closed at the first Write
	once  sync.Once
}

func (c *askedConn) Write(b []byte) (int, error) {
	c.once.Do(func() { close(c.asked) })
	return c.Conn.Write(b)
}

func (c *askedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		select {
		case <-c.asked:
		default:
			return 0, errSpokeUnasked
		}
	}
	return n, err
}

// Close releases idle connections.
func (m *Mailbox) Close() { m.http.CloseIdleConnections() }

func (m *Mailbox) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	data, _, err := m.doHeader(ctx, method, path, body)
	return data, err
}

// doHeader is do, with the reply's header.
func (m *Mailbox) doHeader(ctx context.Context, method, path string, body []byte) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+m.relay+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if m.secret != "" {
		req.Header.Set(HeaderAuth, SignRequest(m.secret, method, path, body, time.Now()))
	}
	resp, err := m.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		err = unwrapURL(err)
		if !lostOnTheWay(err) {
			// Something answered, in another protocol than HTTP.
			return nil, nil, &notHTTPError{err: err}
		}
		if closedUnread(err) {
			// The relay closed the connection as it came, which is said
			// so (io.EOF), not as a relay that does not answer.
			err = fmt.Errorf("%w (%w)", err, io.EOF)
		}
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrRelayUnreachable, m.relay, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxReply+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrRelayUnreachable, m.relay, err)
	}
	// A relay answers 2xx, 401 saying why (HeaderSecret), 404 to a wait
	// when it holds none (older), and 400, 413 or 429 with its reason;
	// anything else is some other server's.
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return data, resp.Header, nil
	case code == http.StatusUnauthorized && resp.Header.Get(HeaderSecret) != "":
		return nil, nil, m.secretRefused(resp.Header.Get(HeaderSecret))
	case code == http.StatusNotFound && path == PathWait:
		return nil, nil, ErrNoWait
	case code == http.StatusBadRequest, code == http.StatusRequestEntityTooLarge, code == http.StatusTooManyRequests:
		return nil, nil, &RefusedError{Status: code, Reason: firstLine(data)}
	}
	return nil, nil, fmt.Errorf("%w: it answered %q", ErrNotRelay, resp.Status)
}

// lostOnTheWay reports whether err, an HTTP client's, is the network's
// (no connection, a timeout, a connection cut) rather than a reply in
// another protocol.
func lostOnTheWay(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || closedUnread(err)
}

// closedUnread reports net/http's word for a connection the server closed
// before it read the request (errServerClosedIdle, unexported): about 1 in
// 1000 connections to a relay that closes each at once, where the rest end
// in EOF or a reset.
func closedUnread(err error) bool {
	return strings.HasSuffix(err.Error(), "server closed idle connection")
}

// firstLine is the first line of a relay's reason, bounded.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// secretRefused says why the relay refused this device's relay secret,
// from its HeaderSecret (anything: it is the relay's word).
func (m *Mailbox) secretRefused(why string) error {
	switch {
	case why == SecretNone:
		return &secretError{fmt.Sprintf("the relay %s has no relay secret, and this device was given one: set the same secret on the relay (ferry-cli relay --secret-file), or none here", m.relay)}
	case m.secret == "":
		return &secretError{fmt.Sprintf("the relay %s takes only devices that hold its relay secret, and this device has none: set it here (--relay-secret-file, or the app's setting beside the relay)", m.relay)}
	}
	return &secretError{fmt.Sprintf("the relay %s refused this device's relay secret (it is not the relay's, or this device's clock is off)", m.relay)}
}

// secretError is a refusal for the relay secret, in a sentence; it is
// ErrRelaySecret.
type secretError struct{ msg string }

func (e *secretError) Error() string        { return e.msg }
func (e *secretError) Is(target error) bool { return target == ErrRelaySecret }

func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

// Put replaces what name holds.
func (m *Mailbox) Put(ctx context.Context, name string, blob []byte) error {
	_, err := m.do(ctx, http.MethodPut, PathSlot+name, blob)
	return err
}

// Push appends blob to name's queue.
func (m *Mailbox) Push(ctx context.Context, name string, blob []byte) error {
	_, err := m.do(ctx, http.MethodPost, PathQueue+name, blob)
	return err
}

// Get returns what the names hold, by index.
func (m *Mailbox) Get(ctx context.Context, names []string) ([][][]byte, error) {
	return m.fetch(ctx, PathSlots, names)
}

// Take returns and removes the blobs queued under the names, by index.
func (m *Mailbox) Take(ctx context.Context, names []string) ([][][]byte, error) {
	return m.fetch(ctx, PathQueues, names)
}

// Wait is Take, but the relay holds the request up to WaitFor when the
// names hold nothing, and answers as soon as a blob comes to one of them.
// An older relay refuses it: ErrNoWait.
func (m *Mailbox) Wait(ctx context.Context, names []string) ([][][]byte, error) {
	return m.fetch(ctx, PathWait, names)
}

func (m *Mailbox) fetch(ctx context.Context, path string, names []string) ([][][]byte, error) {
	recs, _, err := m.fetchHeader(ctx, path, names)
	return recs, err
}

func (m *Mailbox) fetchHeader(ctx context.Context, path string, names []string) ([][][]byte, http.Header, error) {
	data, h, err := m.doHeader(ctx, http.MethodPost, path, EncodeNames(names))
	if err != nil {
		return nil, nil, err
	}
	recs, err := DecodeRecords(data, len(names))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: it answered what a relay does not (%w)", ErrNotRelay, err)
	}
	return recs, h, nil
}

// GetUnwatched is Get, with how long at least no one looked at each name
// (HeaderUnwatched): nil from a relay that does not say (an older one),
// or that says it wrong (the blobs are good all the same).
func (m *Mailbox) GetUnwatched(ctx context.Context, names []string) ([][][]byte, []Unwatched, error) {
	recs, h, err := m.fetchHeader(ctx, PathSlots, names)
	if err != nil {
		return nil, nil, err
	}
	unwatched, _ := ParseUnwatched(h.Get(HeaderUnwatched), len(names))
	return recs, unwatched, nil
}
