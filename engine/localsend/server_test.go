package localsend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// certs are made once per test binary: RSA keys take a while.
var (
	certsOnce sync.Once
	certs     [3]tls.Certificate
)

func testCert(t testing.TB, i int) tls.Certificate {
	t.Helper()
	certsOnce.Do(func() {
		for k := range certs {
			c, k2, err := NewCertPEM()
			if err != nil {
				panic(err)
			}
			if certs[k], err = tls.X509KeyPair(c, k2); err != nil {
				panic(err)
			}
		}
	})
	return certs[i]
}

// memReceiver is a Receiver that keeps files in memory.
type memReceiver struct {
	decide func(o *Offer) ([]string, error) // nil: accept all

	mu      sync.Mutex
	offers  []*Offer
	files   map[string]*bytes.Buffer // committed, by name
	aborted map[string]error
	opened  map[string]bool // sinks opened, by name
	ends    chan error
	block   chan struct{} // when set, Offer waits for it (or ctx)
	stall   chan struct{} // when set, a sink's Write waits for it to close (a receiver that stops taking bytes)
}

func newMemReceiver() *memReceiver {
	return &memReceiver{files: map[string]*bytes.Buffer{}, aborted: map[string]error{}, opened: map[string]bool{}, ends: make(chan error, 16)}
}

func (m *memReceiver) Offer(ctx context.Context, o *Offer) (Session, error) {
	m.mu.Lock()
	m.offers = append(m.offers, o)
	block := m.block
	m.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	var ids []string
	if m.decide != nil {
		var err error
		if ids, err = m.decide(o); err != nil {
			return nil, err
		}
	} else if !o.IsText {
		for _, f := range o.Files {
			ids = append(ids, f.ID)
		}
	}
	index := map[string]int{}
	for i, f := range o.Files {
		index[f.ID] = i
	}
	ss := &memSession{m: m, names: make([]string, len(o.Files))}
	for i, f := range o.Files {
		ss.names[i] = f.FileName
	}
	for _, id := range ids {
		if i, ok := index[id]; ok {
			ss.accepted = append(ss.accepted, i)
		} else {
			ss.accepted = append(ss.accepted, -1) // not offered: the server skips it
		}
	}
	return ss, nil
}

func (m *memReceiver) lastOffer() *Offer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.offers) == 0 {
		return nil
	}
	return m.offers[len(m.offers)-1]
}

type memSession struct {
	m        *memReceiver
	accepted []int
	names    []string // by offer index
}

func (s *memSession) Accepted() []int { return s.accepted }
func (s *memSession) Open(i int) (Sink, error) {
	s.m.mu.Lock()
	s.m.opened[s.names[i]] = true
	s.m.mu.Unlock()
	return &memSink{m: s.m, name: s.names[i]}, nil
}
func (s *memSession) End(err error) { s.m.ends <- err }

type memSink struct {
	m    *memReceiver
	name string
	buf  bytes.Buffer
}

func (k *memSink) Write(p []byte) (int, error) {
	if k.m.stall != nil {
		<-k.m.stall
	}
	return k.buf.Write(p)
}
func (k *memSink) Commit() error {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	if k.m.files[k.name] != nil {
		return errors.New("committed twice")
	}
	k.m.files[k.name] = &k.buf
	return nil
}
func (k *memSink) Abort(err error) {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	k.m.aborted[k.name] = err
}

// startServer serves cfg on 127.0.0.1:0 and returns its address.
func startServer(t *testing.T, cfg ServerConfig) (*Server, string) {
	t.Helper()
	if len(cfg.Cert.Certificate) == 0 {
		cfg.Cert = testCert(t, 0)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func bytesUpload(id, name string, b []byte, withSum bool) Upload {
	u := Upload{File: File{ID: id, FileName: name, Size: int64(len(b)), FileType: "application/octet-stream"},
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
	if withSum {
		s := sha256.Sum256(b)
		u.SHA256 = hex.EncodeToString(s[:])
	}
	return u
}

func TestSendFilesVerifiedClient(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Info: Info{Alias: "rx"}, Receiver: rx})
	cl := NewClient(ClientConfig{Info: Info{Alias: "tx", DeviceModel: "Test"}, Cert: testCert(t, 1)})
	var files []Upload
	for i := range 5 {
		files = append(files, bytesUpload(fmt.Sprint("f", i), fmt.Sprintf("dir/sub/%d.bin", i), bytes.Repeat([]byte{byte(i)}, 1000*i+1), i%2 == 0))
	}
	res, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, files, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Accepted) != 5 || res.Fingerprint != srv.Fingerprint() {
		t.Fatalf("result %+v", res)
	}
	if err := <-rx.ends; err != nil {
		t.Fatalf("session end: %v", err)
	}
	for i := range 5 {
		b := rx.files[fmt.Sprintf("dir/sub/%d.bin", i)]
		if b == nil || b.Len() != 1000*i+1 {
			t.Fatalf("file %d: %v", i, b)
		}
	}
	o := rx.lastOffer()
	if !o.Verified() || o.Sender.Alias != "tx" || o.Sender.DeviceModel != "Test" || !SameFingerprint(o.CertFingerprint, CertFingerprint(testCert(t, 1))) {
		t.Fatalf("offer sender %+v cert %s", o.Sender, o.CertFingerprint)
	}
}

func TestClientWithoutCertIsOnlyAClaim(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	// Claims another device's fingerprint, proves nothing.
	cl := NewClient(ClientConfig{Info: Info{Alias: "liar", Fingerprint: CertFingerprint(testCert(t, 1))}})
	if _, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()},
		[]Upload{bytesUpload("a", "a.txt", []byte("hi"), false)}, SendOptions{}); err != nil {
		t.Fatal(err)
	}
	<-rx.ends
	o := rx.lastOffer()
	if o.Verified() || o.CertFingerprint != "" || !SameFingerprint(o.Sender.Fingerprint, CertFingerprint(testCert(t, 1))) {
		t.Fatalf("offer %+v verified=%v", o, o.Verified())
	}
}

func TestServerRequiringClientCert(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, RequireClientCert: true})
	up := []Upload{bytesUpload("a", "a.txt", []byte("hi"), false)}
	if _, err := NewClient(ClientConfig{}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, up, SendOptions{}); err == nil {
		t.Fatal("a client without a certificate got through")
	}
	if _, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, up, SendOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestClientPinsFingerprint(t *testing.T) {
	rx := newMemReceiver()
	_, addr := startServer(t, ServerConfig{Receiver: rx})
	// The server is not the device that announced testCert(2)'s fingerprint.
	_, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: CertFingerprint(testCert(t, 2))},
		[]Upload{bytesUpload("a", "a.txt", []byte("secret"), false)}, SendOptions{})
	if !errors.Is(err, ErrFingerprint) {
		t.Fatalf("err %v, want ErrFingerprint", err)
	}
	if rx.lastOffer() != nil {
		t.Fatal("the impostor saw the offer")
	}
}

func TestChecksumMismatch(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	u := bytesUpload("a", "a.bin", []byte("the real bytes"), true)
	u.Open = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("other bytes!!!")), nil }
	res, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, []Upload{u}, SendOptions{})
	if !errors.Is(err, ErrChecksum) || !errors.Is(res.Failed["a"], ErrChecksum) {
		t.Fatalf("err %v failed %v", err, res.Failed)
	}
	if err := <-rx.ends; err != nil {
		t.Fatalf("end %v", err)
	}
	if rx.files["a.bin"] != nil || !errors.Is(rx.aborted["a.bin"], ErrChecksum) {
		t.Fatalf("files %v aborted %v", rx.files, rx.aborted)
	}
}

func TestPIN(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, PIN: "123456"})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	tg := Target{Addr: addr, Fingerprint: srv.Fingerprint()}
	up := []Upload{bytesUpload("a", "a.txt", []byte("x"), false)}
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{}); !errors.Is(err, ErrPINRequired) {
		t.Fatalf("no PIN: %v", err)
	}
	// The PIN asked for after a 401.
	var asked []bool
	ask := func(_ context.Context, wrong bool) (string, error) {
		asked = append(asked, wrong)
		return "123456", nil
	}
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{AskPIN: ask}); err != nil || len(asked) != 1 || asked[0] {
		t.Fatalf("asked %v: %v", asked, err)
	}
	<-rx.ends
	// Three wrong ones, then 429 even for the right one.
	for i := range 3 {
		if _, err := cl.Send(context.Background(), tg, up, SendOptions{PIN: "000000"}); !errors.Is(err, ErrWrongPIN) {
			t.Fatalf("wrong PIN %d: %v", i, err)
		}
	}
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{PIN: "123456"}); !errors.Is(err, ErrTooManyPINs) {
		t.Fatalf("after 3 wrong: %v", err)
	}
	var se *StatusError
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{}); !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		t.Fatalf("after 3 wrong, no PIN: %v", err)
	}
}

func TestPINMissingDoesNotCount(t *testing.T) {
	rx := newMemReceiver()
	s, err := NewServer(ServerConfig{Receiver: rx, PIN: "1", Cert: testCert(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("10.0.0.1")
	for range 10 {
		if err := s.checkPIN(a, ""); !errors.Is(err, ErrPINRequired) {
			t.Fatal(err)
		}
	}
	if err := s.checkPIN(a, "1"); err != nil {
		t.Fatal(err)
	}
	// Wrong tries count per address.
	for range 3 {
		_ = s.checkPIN(a, "2")
	}
	if err := s.checkPIN(a, "1"); !errors.Is(err, ErrTooManyPINs) {
		t.Fatal(err)
	}
	if err := s.checkPIN(netip.MustParseAddr("10.0.0.2"), "1"); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestDeclineAndBusy(t *testing.T) {
	rx := newMemReceiver()
	rx.decide = func(o *Offer) ([]string, error) { return nil, fmt.Errorf("%w: by the user", ErrDeclined) }
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	tg := Target{Addr: addr, Fingerprint: srv.Fingerprint()}
	up := []Upload{bytesUpload("a", "a.txt", []byte("x"), false)}
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{}); !errors.Is(err, ErrDeclined) {
		t.Fatalf("decline: %v", err)
	}
	rx.decide = func(o *Offer) ([]string, error) { return nil, ErrBusy }
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("busy: %v", err)
	}
}

func TestSessionSlots(t *testing.T) {
	rx := newMemReceiver()
	rx.block = make(chan struct{})
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxOffersPerAddr: 1})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	tg := Target{Addr: addr, Fingerprint: srv.Fingerprint()}
	up := []Upload{bytesUpload("a", "a.txt", []byte("x"), false)}
	first := make(chan error, 1)
	go func() { _, err := cl.Send(context.Background(), tg, up, SendOptions{}); first <- err }()
	for rx.lastOffer() == nil {
		waitABit()
	}
	if _, err := cl.Send(context.Background(), tg, up, SendOptions{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second session from one address: %v", err)
	}
	close(rx.block)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestTextOffer(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	var accepted []string
	acceptedCalled := false
	res, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()},
		[]Upload{TextUpload("t", "hello there")}, SendOptions{Accepted: func(ids []string) { accepted, acceptedCalled = ids, true }})
	if err != nil || res.Accepted != nil || !acceptedCalled || accepted != nil {
		t.Fatalf("res %+v err %v", res, err)
	}
	if o := rx.lastOffer(); !o.IsText || o.Text != "hello there" {
		t.Fatalf("offer %+v", o)
	}
	if err := <-rx.ends; err != nil {
		t.Fatal(err)
	}
}

func TestCancelBySender(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	defer pw.Close()
	u := Upload{File: File{ID: "a", FileName: "big.bin", Size: 1 << 30}, Open: func() (io.ReadCloser, error) { return pr, nil }}
	done := make(chan error, 1)
	go func() {
		_, err := cl.Send(ctx, Target{Addr: addr, Fingerprint: srv.Fingerprint()}, []Upload{u}, SendOptions{
			Written: func(string, int64) { cancel() }})
		done <- err
	}()
	// The send cancels itself once bytes flow; the pipe is closed then.
	if _, err := pw.Write(make([]byte, 64<<10)); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("send: %v", err)
	}
	if err := <-rx.ends; !errors.Is(err, ErrCancelled) {
		t.Fatalf("end %v, want ErrCancelled", err)
	}
	rx.mu.Lock()
	defer rx.mu.Unlock()
	// Nothing is kept, and a file the upload had begun is aborted (on a
	// loaded machine the cancel can reach the server before the upload).
	if rx.files["big.bin"] != nil || rx.opened["big.bin"] && rx.aborted["big.bin"] == nil {
		t.Fatalf("files %v opened %v aborted %v", rx.files, rx.opened, rx.aborted)
	}
}

func TestCancelWhilePrompting(t *testing.T) {
	rx := newMemReceiver()
	rx.block = make(chan struct{})
	defer close(rx.block)
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(ctx, Target{Addr: addr, Fingerprint: srv.Fingerprint()},
			[]Upload{bytesUpload("a", "a", []byte("x"), false)}, SendOptions{})
		done <- err
	}()
	for rx.lastOffer() == nil {
		waitABit()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// roundTripFunc is an http.RoundTripper of one function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A refusal that crosses the cancel is not what the send reports: the
// receiver answers a prepare-upload whose sender went away with a 500, and
// net/http can hand that answer over as the request is cancelled (4 of
// 3,000 runs of TestCancelWhilePrompting did, and a CI run). The cancel is
// what happened.
func TestCancelCrossingARefusal(t *testing.T) {
	for _, st := range []int{http.StatusInternalServerError, http.StatusForbidden, http.StatusConflict} {
		ctx, cancel := context.WithCancel(context.Background())
		c := NewClient(ClientConfig{Cert: testCert(t, 1)})
		k := c.open(Target{Addr: "127.0.0.1:53317"})
		prepares := 0
		k.http = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if !strings.HasSuffix(r.URL.Path, "/prepare-upload") {
				return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil // the cancel
			}
			prepares++
			cancel() // the user cancels as the receiver's refusal is on its way
			return &http.Response{StatusCode: st, Body: io.NopCloser(strings.NewReader(`{"message":"Unknown error by receiver"}`)), Request: r}, nil
		})}
		_, err := c.prepare(ctx, k, &PrepareUpload{Files: map[string]File{"a": {ID: "a", FileName: "a", Size: 1}}}, SendOptions{})
		if !errors.Is(err, context.Canceled) || prepares != 1 {
			t.Errorf("status %d crossing the cancel: %v after %d prepare-uploads, want the cancel after 1", st, err, prepares)
		}
	}
}

// TestUploadToAReceiverThatStopsTakingIt: a receiver that stops taking an
// upload's bytes (a phone asleep or out of range) ends it with ErrStalled
// after StallTimeout; before, the send stayed "active" until TCP gave up,
// some 15 minutes later.
func TestUploadToAReceiverThatStopsTakingIt(t *testing.T) {
	rx := newMemReceiver()
	rx.stall = make(chan struct{})
	defer close(rx.stall)
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	const stall = 300 * time.Millisecond
	cl := NewClient(ClientConfig{Cert: testCert(t, 1), StallTimeout: stall})
	// More than the sockets between them hold: the client's body waits.
	big := bytesUpload("f", "big.bin", make([]byte, 64<<20), false)
	start := time.Now()
	_, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, []Upload{big}, SendOptions{})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("send to a receiver that stopped taking the file: %v, want ErrStalled", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("given up after %v, with a stall timeout of %v", took, stall) // a bound on a hang, not a speed test
	}
}

// nextEnd is the error the next session of rx ended with.
func nextEnd(t *testing.T, rx *memReceiver) error {
	t.Helper()
	select {
	case err := <-rx.ends:
		return err
	case <-time.After(hangGuard):
		t.Fatal("the session never ended")
		return nil
	}
}

// An offer's files go to the receiver by name and, among files of one
// name, by ID, whatever order the offer's map is read in: the receiver
// numbers copies of a name in the order it is given them. A preview is
// kept only for a text offer.
func TestOfferFilesInNameThenIDOrder(t *testing.T) {
	files := map[string]File{"b": {FileName: "b.txt", Preview: "x"}}
	for i := range 8 {
		files[fmt.Sprintf("id%d", i)] = File{FileName: "a.txt"}
	}
	for range 20 { // a fresh map order each time
		got := offerFiles(files, false)
		var ids []string
		for _, f := range got {
			ids = append(ids, f.ID)
			if f.Preview != "" {
				t.Errorf("%s keeps its preview in a file offer", f.ID)
			}
		}
		want := []string{"id0", "id1", "id2", "id3", "id4", "id5", "id6", "id7", "b"}
		if !slices.Equal(ids, want) {
			t.Fatalf("files in order %v, want %v", ids, want)
		}
	}
	if got := offerFiles(map[string]File{"t": {FileName: "t.txt", Preview: "hello"}}, true); got[0].Preview != "hello" {
		t.Errorf("a text offer lost its preview: %+v", got)
	}
}
