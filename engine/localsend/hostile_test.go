package localsend

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// hostileBodies are prepare-upload bodies a peer may send; every one must
// be refused with 400 (and reach no Receiver), or decode within bounds.
var hostileBodies = []struct {
	name string
	body string
}{
	{"empty", ``},
	{"not json", `hello`},
	{"array", `[]`},
	{"no files", `{"info":{"alias":"a","fingerprint":"f"},"files":{}}`},
	{"files null", `{"info":{"alias":"a","fingerprint":"f"},"files":null}`},
	{"no fingerprint", `{"info":{"alias":"a"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}}`},
	{"negative size", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":-1,"fileType":"t"}}}`},
	{"huge size", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1e30,"fileType":"t"}}}`},
	{"id differs from key", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"y","fileName":"a","size":1,"fileType":"t"}}}`},
	{"no name", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"","size":1,"fileType":"t"}}}`},
	{"bad sha", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t","sha256":"zz"}}}`},
	{"bad port", `{"info":{"fingerprint":"f","port":70000},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}}`},
	{"bad protocol", `{"info":{"fingerprint":"f","protocol":"gopher"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}}`},
	{"long alias", `{"info":{"fingerprint":"f","alias":"` + strings.Repeat("a", MaxFieldLen+1) + `"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}}`},
	// (Invalid UTF-8 is not refused: encoding/json replaces it with U+FFFD.)
	{"deep nesting", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t","metadata":` + strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat(`}`, 50) + `}}}`},
	{"trailing data", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}} {}`},
	// A closing bracket or brace after the document (no array or object
	// holds it) is trailing data too: json.Decoder.More took it for the end
	// of one, and the offer was accepted until 2026-12-06.
	{"trailing bracket", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}}]`},
	{"trailing brace", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}} }`},
	{"wrong types", `{"info":"me","files":[1,2,3]}`},
	{"long name", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"` + strings.Repeat("n", MaxNameLen+1) + `","size":1,"fileType":"t"}}}`},
	// A file without its size could only fail once accepted (its upload is
	// never the 0 bytes it would be taken for).
	{"no size", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","fileType":"t"},"y":{"id":"y","fileName":"b","size":1,"fileType":"t"}}}`},
	{"null size", `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":null,"fileType":"t"}}}`},
}

func TestHostilePrepareUpload(t *testing.T) {
	rx := newMemReceiver()
	_, addr := startServer(t, ServerConfig{Receiver: rx})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	for _, c := range hostileBodies {
		t.Run(c.name, func(t *testing.T) {
			resp, err := hc.Post("https://"+addr+apiPrefix+"prepare-upload", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte(`"message"`)) {
				t.Fatalf("status %d body %s", resp.StatusCode, b)
			}
		})
	}
	if o := rx.lastOffer(); o != nil {
		t.Fatalf("a hostile body reached the receiver: %+v", o)
	}
	// Over the byte cap.
	big := `{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":1,"fileType":"t","preview":"` + strings.Repeat("a", MaxPrepareBytes) + `"}}}`
	resp, err := hc.Post("https://"+addr+apiPrefix+"prepare-upload", "application/json", strings.NewReader(big))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("an over-cap body got %d", resp.StatusCode)
		}
	}
}

// rawUpload posts bytes to upload with the given query.
func rawUpload(t *testing.T, hc *http.Client, addr, query string, body io.Reader, size int64) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "https://"+addr+apiPrefix+"upload?"+query, body)
	req.ContentLength = size
	resp, err := hc.Do(req)
	if err != nil {
		return -1
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHostileUploads(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	k := cl.open(Target{Addr: addr, Fingerprint: srv.Fingerprint()})
	defer k.close()
	req := &PrepareUpload{Info: cl.Info(), Files: map[string]File{
		"a": {ID: "a", FileName: "a.bin", Size: 10}, "b": {ID: "b", FileName: "b.bin", Size: 10}, "c": {ID: "c", FileName: "c.bin", Size: 10},
	}}
	ans, err := cl.prepare(context.Background(), k, req, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A second session of the same files: tokens are bound to their session.
	other, err := cl.prepare(context.Background(), k, req, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	q := func(s, f, tok string) string { return fmt.Sprintf("sessionId=%s&fileId=%s&token=%s", s, f, tok) }
	ten := func() io.Reader { return bytes.NewReader(make([]byte, 10)) }
	for _, c := range []struct {
		name  string
		query string
		want  int
	}{
		{"missing token", "sessionId=" + ans.SessionID + "&fileId=a", 400},
		{"unknown session", q("nope", "a", ans.Files["a"]), 403},
		{"token of another file", q(ans.SessionID, "a", ans.Files["b"]), 403},
		{"guessed token", q(ans.SessionID, "a", strings.Repeat("0", 32)), 403},
		{"unknown file", q(ans.SessionID, "z", ans.Files["a"]), 403},
		{"the file's token in another session", q(other.SessionID, "a", ans.Files["a"]), 403},
	} {
		if got := rawUpload(t, hc, addr, c.query, ten(), 10); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}
	// More bytes than offered: 400, nothing final.
	if got := rawUpload(t, hc, addr, q(ans.SessionID, "a", ans.Files["a"]), bytes.NewReader(make([]byte, 11)), 11); got != 400 {
		t.Errorf("long upload: %d", got)
	}
	// A second upload of a file is refused.
	if got := rawUpload(t, hc, addr, q(ans.SessionID, "a", ans.Files["a"]), ten(), 10); got != 403 {
		t.Errorf("second upload: %d", got)
	}
	// Fewer bytes (the connection ends early) leaves the partial aborted.
	pr, pw := io.Pipe()
	go func() { pw.Write(make([]byte, 4)); pw.CloseWithError(errors.New("cut")) }()
	_ = rawUpload(t, hc, addr, q(ans.SessionID, "b", ans.Files["b"]), pr, 10)
	if got := rawUpload(t, hc, addr, q(ans.SessionID, "c", ans.Files["c"]), ten(), 10); got != 200 {
		t.Errorf("good upload: %d", got)
	}
	if err := <-rx.ends; err != nil {
		t.Fatalf("end: %v", err)
	}
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if rx.files["a.bin"] != nil || rx.files["b.bin"] != nil || rx.files["c.bin"] == nil {
		t.Fatalf("files %v", rx.files)
	}
	if !errors.Is(rx.aborted["a.bin"], ErrSize) || !errors.Is(rx.aborted["b.bin"], ErrSize) {
		t.Fatalf("aborted %v", rx.aborted)
	}
}

func TestUploadFromAnotherAddress(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx})
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	k := cl.open(Target{Addr: addr, Fingerprint: srv.Fingerprint()})
	defer k.close()
	ans, err := cl.prepare(context.Background(), k, &PrepareUpload{Info: cl.Info(), Files: map[string]File{"a": {ID: "a", FileName: "a", Size: 1}}}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same token from 127.0.0.2 is refused.
	_, port, _ := net.SplitHostPort(addr)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	defer hc.CloseIdleConnections()
	if got := rawUpload(t, hc, "127.0.0.1:"+port, fmt.Sprintf("sessionId=%s&fileId=a&token=%s", ans.SessionID, ans.Files["a"]), strings.NewReader("x"), 1); got != 403 {
		t.Fatalf("upload from another address: %d", got)
	}
}

func TestConnectionsPerAddress(t *testing.T) {
	rx := newMemReceiver()
	_, addr := startServer(t, ServerConfig{Receiver: rx, ConnsPerAddr: 2})
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		defer c.Close()
	}
	// The third is closed at once: a read sees EOF (or a reset), not a TLS answer.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the third connection from one address stayed open")
	}
	// Once one closes, a new one is served.
	conns[0].Close()
	for {
		tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			tc.Close()
			break
		}
		waitABit()
	}
}

func FuzzPrepareUpload(f *testing.F) {
	for _, c := range hostileBodies {
		f.Add([]byte(c.body))
	}
	f.Add([]byte(`{"info":{"alias":"a","fingerprint":"f","port":53317,"protocol":"https"},"files":{"x":{"id":"x","fileName":"d/a.txt","size":3,"fileType":"text/plain","preview":"abc","sha256":"` + strings.Repeat("a", 64) + `"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p PrepareUpload
		if unmarshalBounded(b, MaxPrepareBytes, &p) != nil || p.Validate() != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which is not one JSON document", b)
		}
		if len(p.Files) == 0 || len(p.Files) > MaxFiles {
			t.Fatalf("validated %d files", len(p.Files))
		}
		for k, fl := range p.Files {
			if fl.Size < 0 || fl.FileName == "" || (fl.ID != "" && fl.ID != k) {
				t.Fatalf("validated file %+v", fl)
			}
		}
		if txt, ok := p.TextOf(); ok && txt == "" {
			t.Fatal("an empty text offer")
		}
	})
}

// hostileAnnouncements are multicast datagrams a device on the network
// may send: each is refused, or taken as the device it describes. They
// double as FuzzAnnouncement's seeds.
var hostileAnnouncements = []struct {
	name string
	in   string
	ok   bool
}{
	{"an app's", `{"alias":"a","version":"2.1","fingerprint":"F","port":53317,"protocol":"https","announce":true}`, true},
	{"an answer over http", `{"fingerprint":"F","port":1,"protocol":"http","announce":false,"download":true,"deviceType":"mobile"}`, true},
	{"no port", `{"alias":"a","fingerprint":"F","port":0}`, false},
	{"port too large", `{"fingerprint":"F","port":65536}`, false},
	{"no fingerprint", `{"alias":"a","port":53317}`, false},
	{"long alias", `{"alias":"` + strings.Repeat("a", MaxFieldLen+1) + `","fingerprint":"F","port":1}`, false},
	{"another protocol", `{"fingerprint":"F","port":1,"protocol":"gopher"}`, false},
	{"not json", `hello`, false},
	{"deep nesting", strings.Repeat("[", 100), false},
	{"over the size bound", `{"fingerprint":"F","port":1,"alias":"a"` + strings.Repeat(" ", MaxSmallBytes) + `}`, false},
	{"trailing data", `{"fingerprint":"F","port":1} {}`, false},
	// A closing bracket or brace after the document (no array or object
	// holds it): json.Decoder.More took it for the end of one, and the
	// datagram was taken until 2026-12-06.
	{"trailing bracket", `{"fingerprint":"F","port":1}]`, false},
	{"trailing brace", `{"fingerprint":"F","port":1}}`, false},
}

func TestHostileAnnouncements(t *testing.T) {
	for _, c := range hostileAnnouncements {
		if _, err := ParseAnnouncement([]byte(c.in)); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadInput)) {
			t.Errorf("%s: %v, want taken %v", c.name, err, c.ok)
		}
	}
}

func FuzzAnnouncement(f *testing.F) {
	for _, c := range hostileAnnouncements {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseAnnouncement(b)
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which is not one JSON document", b)
		}
		if in.Fingerprint == "" || in.Port <= 0 || in.Port > 65535 || len(in.Alias) > MaxFieldLen {
			t.Fatalf("accepted %+v", in)
		}
		// What it takes is what it would announce itself.
		again, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseAnnouncement(again)
		if err != nil || !reflect.DeepEqual(back, in) {
			t.Fatalf("accepted %+v, which reads back as %+v, %v", in, back, err)
		}
	})
}

func TestDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{}`, 1}, {`{"a":[1,{"b":2}]}`, 3}, {`"{{{{"`, 0}, {`{"a":"\"{["}`, 1}, {`[[[]]]`, 3},
	} {
		if got := depth([]byte(c.in)); got != c.want {
			t.Errorf("depth(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

// A prepare-upload whose body trickles in holds its slot for BodyTimeout
// at most: a real sender gets through afterwards.
func TestSlowBodyFreesItsSlot(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxSessions: 1, BodyTimeout: 300 * time.Millisecond})
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	fmt.Fprintf(tc, "POST %sprepare-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"info\":", apiPrefix)
	cl := NewClient(ClientConfig{Cert: testCert(t, 1)})
	deadline := time.Now().Add(hangGuard)
	for {
		_, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, []Upload{TextUpload("t", "hi")}, SendOptions{})
		if err == nil {
			break
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("the real sender: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // retrying a refused send, not waiting for readiness
	}
	<-rx.ends
}

// TestConnectionsQuietGivePlace: at the total bound, connections from many
// addresses that send nothing cannot keep a sender out: a newcomer takes
// the place of the one quiet longest, once it has been quiet EvictQuiet.
func TestConnectionsQuietGivePlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		quiet time.Duration
		one   bool // the three idle connections come from one address
		in    bool
	}{
		{"quiet ones give way", 20 * time.Millisecond, false, true},
		{"none quiet long enough", time.Hour, false, false},
		{"an address over its fair share gives way at once", time.Hour, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, ServerConfig{Receiver: newMemReceiver(), MaxConns: 3, EvictQuiet: tc.quiet})
			var idle []net.Conn
			for i := range 3 {
				// Distinct loopback addresses, as from three devices.
				from := byte(10 + i)
				if tc.one {
					from = 10
				}
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				idle = append(idle, c)
			}
			if tc.in && !tc.one {
				time.Sleep(2 * tc.quiet) // the idle ones become quiet: the behaviour under test, not readiness
			}
			tc2, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
			if tc2 != nil {
				tc2.Close()
			}
			if (err == nil) != tc.in {
				t.Fatalf("a sender beside 3 idle connections: %v", err)
			}
			if !tc.in {
				return
			}
			// One of the idle connections gave its place (EOF or reset).
			closed := 0
			for _, c := range idle {
				c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					closed++
				}
			}
			if closed != 1 {
				t.Fatalf("%d idle connections closed, want 1", closed)
			}
		})
	}
}

// TestConnectionServingKeepsPlace: a prepare-upload waiting for the user
// reads nothing for as long as the prompt is open; its connection keeps
// its place however quiet it is, and the newcomer is refused instead.
func TestConnectionServingKeepsPlace(t *testing.T) {
	rx := newMemReceiver()
	rx.block = make(chan struct{})
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxConns: 1, EvictQuiet: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		up := []Upload{{File: File{ID: "a", FileName: "a.txt", Size: 1, FileType: "text/plain"}, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("a")), nil }}}
		_, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, up, SendOptions{})
		done <- err
	}()
	for {
		rx.mu.Lock()
		n := len(rx.offers)
		rx.mu.Unlock()
		if n > 0 {
			break
		}
		waitABit()
	}
	time.Sleep(50 * time.Millisecond) // quiet for longer than EvictQuiet: the behaviour under test
	if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil {
		c.Close()
		t.Fatal("a newcomer took the place of a request being served")
	}
	close(rx.block)
	if err := <-done; err != nil {
		t.Fatalf("the send waiting for its answer: %v", err)
	}
}

// TestOffersBeingDecidedLeaveBodiesFree: a body's place (MaxSessions) is
// held only while it is read; offers waiting for the Receiver (the user)
// are bounded by MaxOffers, so offers from many addresses all reach the
// Receiver, whose admission shares its places fairly, instead of a few
// of them holding the server busy for everyone.
func TestOffersBeingDecidedLeaveBodiesFree(t *testing.T) {
	rx := newMemReceiver()
	rx.block = make(chan struct{})
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxSessions: 1, MaxOffers: 3})
	tg := Target{Addr: addr, Fingerprint: srv.Fingerprint()}
	send := func(from byte) error {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
		cl := NewClient(ClientConfig{Cert: testCert(t, 1), Dial: d.DialContext})
		_, err := cl.Send(context.Background(), tg, []Upload{bytesUpload("a", fmt.Sprintf("from-%d.txt", from), []byte("x"), false)}, SendOptions{})
		return err
	}
	errs := make(chan error, 3)
	for i := range 3 {
		go func() { errs <- send(byte(20 + i)) }()
	}
	for {
		rx.mu.Lock()
		n := len(rx.offers)
		rx.mu.Unlock()
		if n == 3 {
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("an offer was refused while the others waited: %v", err)
		default:
		}
		waitABit()
	}
	// The fourth is over MaxOffers.
	if err := send(30); !errors.Is(err, ErrBusy) {
		t.Fatalf("an offer over MaxOffers: %v", err)
	}
	close(rx.block)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadBounded(t *testing.T) {
	for _, n := range []int{0, 1, readChunk - 1, readChunk, readChunk + 1, 3*readChunk + 7} {
		b := bytes.Repeat([]byte{'x'}, n)
		got, err := readBounded(bytes.NewReader(b), int64(n))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes at a limit of %d: %d bytes, %v", n, n, len(got), err)
		}
		if _, err := readBounded(bytes.NewReader(append(b, 'y')), int64(n)); !errors.Is(err, ErrBadInput) {
			t.Fatalf("%d bytes at a limit of %d: %v", n+1, n, err)
		}
	}
	if _, err := readBounded(iotest.ErrReader(io.ErrClosedPipe), 10); !errors.Is(err, ErrBadInput) {
		t.Fatalf("a failing body: %v", err)
	}
	// A body of known length is one buffer, charged (and waited for) first;
	// one of unknown length is charged piece by piece and for the join.
	var charged []int64
	take := func(n int64, wait bool) error {
		charged = append(charged, n)
		if wait != (len(charged) == 1 && n == 5) {
			t.Fatalf("charge %d waits: %v", n, wait)
		}
		return nil
	}
	if got, err := readBudgeted(strings.NewReader("hello"), 5, 10, take); err != nil || string(got) != "hello" || !slices.Equal(charged, []int64{5}) {
		t.Fatalf("known length: %q, %v, charged %v", got, err, charged)
	}
	charged = nil
	if _, err := readBudgeted(strings.NewReader("hello!"), 5, 10, take); !errors.Is(err, ErrBadInput) {
		t.Fatalf("a body longer than its length: %v", err)
	}
	charged = nil
	if _, err := readBudgeted(strings.NewReader("hell"), 5, 10, take); !errors.Is(err, ErrBadInput) {
		t.Fatalf("a body shorter than its length: %v", err)
	}
	charged = nil
	n := int64(readChunk + 3)
	if got, err := readBudgeted(bytes.NewReader(make([]byte, n)), -1, 2*readChunk, take); err != nil || int64(len(got)) != n ||
		!slices.Equal(charged, []int64{readChunk, readChunk, n}) {
		t.Fatalf("unknown length: %d bytes, %v, charged %v", len(got), err, charged)
	}
	refuse := func(int64, bool) error { return errBodyBudget }
	if _, err := readBudgeted(strings.NewReader("x"), -1, 10, refuse); !errors.Is(err, ErrBusy) {
		t.Fatalf("a refused charge: %v", err)
	}
}

// TestAcceptedSessionMustStart: an accepted session whose sender begins
// no upload within StartGrace ends (its place and the Receiver's manifest
// are freed), long before SessionIdle.
func TestAcceptedSessionMustStart(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, StartGrace: 100 * time.Millisecond})
	release := make(chan struct{})
	up := []Upload{{File: File{ID: "a", FileName: "a.txt", Size: 1, FileType: "text/plain"},
		Open: func() (io.ReadCloser, error) { <-release; return io.NopCloser(strings.NewReader("a")), nil }}}
	done := make(chan error, 1)
	go func() {
		_, err := NewClient(ClientConfig{Cert: testCert(t, 1)}).Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, up, SendOptions{})
		done <- err
	}()
	if err := nextEnd(t, rx); !errors.Is(err, ErrTimeout) {
		t.Fatalf("the session that never began ended with %v", err)
	}
	close(release)
	if err := <-done; err == nil {
		t.Fatal("an upload into an ended session succeeded")
	}
}

// TestBodyPlaceWaitsForNewcomer: when every body place is being read, an
// offer from an address holding none waits for one instead of 409 (a
// flood posting again after each 409 would otherwise keep the places),
// while the address reading already gets 409 at once.
func TestBodyPlaceWaitsForNewcomer(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxSessions: 1})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	tc, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	fmt.Fprintf(tc, "POST %sprepare-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"info\":", apiPrefix)
	send := func(from byte) error {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
		cl := NewClient(ClientConfig{Cert: testCert(t, 1), Dial: d.DialContext})
		_, err := cl.Send(context.Background(), Target{Addr: addr, Fingerprint: srv.Fingerprint()}, []Upload{TextUpload("t", "hi")}, SendOptions{})
		return err
	}
	real := make(chan error, 1)
	waitFor := func(what string) {
		for deadline := time.Now().Add(hangGuard); ; waitABit() {
			select {
			case err := <-real:
				t.Fatalf("the newcomer did not wait for a place: %v", err)
			default:
			}
			srv.mu.Lock()
			pending, waiting := len(srv.pending), len(srv.bodyWait)
			srv.mu.Unlock()
			if what == "pending" && pending == 1 || what == "waiting" && waiting == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d pending, %d waiting", what, pending, waiting)
			}
		}
	}
	waitFor("pending") // the slow body holds the place
	if err := send(2); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second offer from the address being read: %v", err)
	}
	go func() { real <- send(3) }()
	waitFor("waiting")       // the newcomer waits
	tc.Write([]byte("1234")) // the body ends, malformed: its place is free
	if err := <-real; err != nil {
		t.Fatalf("the newcomer: %v", err)
	}
	<-rx.ends
}

// TestBodyBudget: the prepare-upload bodies being read share
// MaxBodyBytes. Bodies of unknown length get 409 when their next piece
// does not fit (bodies streamed towards the cap from four addresses held
// 4 x 32 MiB, ferry-bench hostile-localsend), and an offer of known length
// waits for its share rather than being refused.
func TestBodyBudget(t *testing.T) {
	rx := newMemReceiver()
	srv, addr := startServer(t, ServerConfig{Receiver: rx, MaxBodyBytes: 3 << 20})
	state := func() (held, peak int64) {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.bodyHeld, srv.bodyPeak
	}
	// Four addresses stream 1.5 MiB of a body of unknown length, and stop.
	type streamer struct {
		tc     *tls.Conn
		status chan int
	}
	var streams []streamer
	for i := range 4 {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 6, byte(1+i))}}
		tc, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		st := streamer{tc, make(chan int, 1)}
		streams = append(streams, st)
		go func() {
			chunk := append([]byte(`{"info":{"fingerprint":"f"},"files":{"a":{"id":"a","fileName":"a","size":1,"fileType":"t","preview":"`), bytes.Repeat([]byte("x"), 3<<19)...)
			fmt.Fprintf(tc, "POST %sprepare-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", apiPrefix, len(chunk))
			tc.Write(append(chunk, "\r\n"...)) // fails once the server answered and closed
		}()
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
			if err != nil {
				st.status <- -1
				return
			}
			resp.Body.Close()
			st.status <- resp.StatusCode
		}()
	}
	// All but one get 409 as their next piece does not fit; one holds 2 MiB
	// and waits for more bytes (at least one always does: the last to try
	// for a piece finds the others' given back).
	refused, blocked := 0, -1
	for deadline := time.Now().Add(hangGuard); refused < 3; waitABit() {
		for i, st := range streams {
			select {
			case s := <-st.status:
				if s != http.StatusConflict {
					t.Fatalf("a body streamed beyond the budget got %d, want 409", s)
				}
				refused++
				streams[i].status = nil
			default:
			}
		}
		if time.Now().After(deadline) {
			held, peak := state()
			t.Fatalf("%d bodies refused; %d bytes held, at most %d", refused, held, peak)
		}
	}
	for i, st := range streams {
		if st.status != nil {
			blocked = i
		}
	}
	if held, peak := state(); held != 2<<20 || peak > 3<<20 {
		t.Fatalf("%d bytes held, at most %d: want 2 MiB, at most 3", held, peak)
	}
	// An offer of known length (1.3 MB) does not fit beside it: it waits.
	body := floodOffer(12000)
	done := make(chan int, 1)
	go func() {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 6, 9)}}
		hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Post("https://"+addr+apiPrefix+"prepare-upload", "application/json", strings.NewReader(body))
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	known := func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for p := range srv.pending {
			if p.addr == netip.AddrFrom4([4]byte{127, 0, 6, 9}) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(hangGuard); ; waitABit() {
		if known() {
			waitABit()
			break
		}
		select {
		case s := <-done:
			t.Fatalf("the offer of known length did not wait: %d", s)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the offer of known length never came")
		}
	}
	// The blocked body ends: joining it needs as much again, which does not
	// fit (409); its memory is given back, and the waiting offer goes in.
	fmt.Fprint(streams[blocked].tc, "1\r\n\"\r\n0\r\n\r\n")
	if s := <-streams[blocked].status; s != http.StatusConflict {
		t.Fatalf("the body whose join did not fit got %d, want 409", s)
	}
	if s := <-done; s != http.StatusOK {
		t.Fatalf("the offer of known length got %d, want 200", s)
	}
	if held, peak := state(); held != 0 || peak > 3<<20 {
		t.Fatalf("%d bytes held at the end, at most %d", held, peak)
	}
}

// TestTextOfferWithoutSize: a text (one text/* file with a preview) may
// leave its size out, as its preview holds it; another file may not.
func TestTextOfferWithoutSize(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"info":{"fingerprint":"f"},"files":{"t":{"id":"t","fileName":"t.txt","fileType":"text/plain","preview":"hi"}}}`, true},
		{`{"info":{"fingerprint":"f"},"files":{"t":{"id":"t","fileName":"t.txt","fileType":"text/plain"}}}`, false},
		{`{"info":{"fingerprint":"f"},"files":{"x":{"id":"x","fileName":"a","size":0,"fileType":"t"}}}`, true},
	} {
		var p PrepareUpload
		err := unmarshalBounded([]byte(c.body), MaxPrepareBytes, &p)
		if err == nil {
			err = p.Validate()
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.body, err)
		}
	}
}
