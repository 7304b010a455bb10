package anywhere

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// A connection the relay closed is lost on the way, however net/http says
// it: its own word for one closed before the request was read is neither
// a net.Error nor EOF, and was taken for an answer in another protocol
// ("is not a Ferry relay: it answers, but not in HTTP"; 1 in 1000 tries
// of a relay that closes each connection at once).
func TestLostOnTheWay(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{errors.New("http: server closed idle connection"), true},
		{errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.2"`), false},
	} {
		if got := lostOnTheWay(c.err); got != c.lost {
			t.Errorf("lostOnTheWay(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A relay that closed the connection before net/http wrote the request
// (its errServerClosedIdle) closed it as surely as one whose close reads
// as EOF, and is said alike ("closed the connection without answering"):
// it read "does not answer", with no reason, about 1 in 1000 tries of
// TestRelayFaultsAreSentences' relay that closes each connection at once.
func TestRelayClosedUnreadIsEOF(t *testing.T) {
	mb := NewMailbox("127.0.0.1:9", "")
	mb.http.Transport = roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("http: server closed idle connection")
	})
	_, err := mb.do(context.Background(), http.MethodGet, PathWait, nil)
	if !errors.Is(err, ErrRelayUnreachable) || !errors.Is(err, io.EOF) {
		t.Errorf("got %v, want a relay unreachable by EOF", err)
	}
}

// closeConn is a connection that says when it is closed.
type closeConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *closeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A server that speaks first (SSH) on a connection the mailbox holds
// unused is no line in the process's log: net/http logged 'Unsolicited
// response received on idle HTTP channel starting with "SSH-2.0-..."' to
// the standard logger, under ferry-cli's sentence. Here the connection is
// unused as when presence and a wait run together and one's failure
// cancels the other: its request is cancelled while it is dialled, and it
// goes to the idle pool.
func TestServerSpeakingFirstIsNoLogLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n")
				io.Copy(io.Discard, c)
			}()
		}
	}()

	var logged bytes.Buffer
	var logMu sync.Mutex
	saved := log.Writer()
	log.SetOutput(writerFunc(func(b []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logged.Write(b)
	}))
	t.Cleanup(func() { log.SetOutput(saved) })

	dialing, release := make(chan struct{}), make(chan struct{})
	conns := make(chan *closeConn, 1)
	mb := newMailbox(ln.Addr().String(), "", func(ctx context.Context, network, addr string) (net.Conn, error) {
		close(dialing)
		<-release
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &closeConn{Conn: c, closed: make(chan struct{})}
		conns <- cc
		return cc, nil
	})
	t.Cleanup(mb.Close)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mb.Put(ctx, strings.Repeat("a", NameLen), []byte("x")) }()
	<-dialing
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Put = %v, want context.Canceled", err)
	}
	close(release)
	// The connection the cancelled request dialled goes idle; the
	// transport reads the server's first words on it and closes it.
	<-(<-conns).closed

	logMu.Lock()
	defer logMu.Unlock()
	if logged.Len() > 0 {
		t.Errorf("the standard logger got %q, want nothing", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
