package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// noLANLook shortens, for t, the look for a device on the local network
// that a send makes before it says what the relay said (onLAN, findPeer:
// resolveWait, 1.5 s in TestMain): these tests' devices were last seen at
// no address and the tests see no network interfaces (TestMain), so that
// look finds nothing however long it takes.
func noLANLook(t *testing.T) {
	old := resolveWait
	resolveWait = 50 * time.Millisecond
	t.Cleanup(func() { resolveWait = old })
}

// tcpServer runs serve for each connection to a loopback TCP port.
func tcpServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return ln.Addr().String()
}

// TestRelayFaultsAreSentences: whatever goes wrong at the relay's address
// (it closes the connection, at once or in the middle of its answer;
// speaks another protocol; refuses the request; never answers) send and
// receive --anywhere say in one sentence what the relay, as the user typed
// it, did, and why in plain words: a catch-all ended in the Go error chain
// ("through relay R: relay refused the request: R: 429 Too Many Requests
// (slow down)", "not in HTTP (readLoopPeekFailLocked: %!w(<nil>))"), and a
// relay that closed the connection "does not answer".
func TestRelayFaultsAreSentences(t *testing.T) {
	noLANLook(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	file := writeFile(t, "a.txt", "a")
	status := func(code int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	for _, tc := range []struct {
		name, addr, says string
	}{
		{"closes at once", tcpServer(t, func(c net.Conn) {}), "closed the connection without answering"},
		{"closes after the request", tcpServer(t, func(c net.Conn) { http.ReadRequest(bufio.NewReader(c)) }), "closed the connection without answering"},
		{"closes mid-answer", tcpServer(t, func(c net.Conn) {
			http.ReadRequest(bufio.NewReader(c))
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
		}), "closed the connection in the middle of its answer"},
		{"speaks SSH", tcpServer(t, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n"); io.Copy(io.Discard, c) }), "is not a Ferry relay: it answers, but not in HTTP"},
		{"too many requests", status(http.StatusTooManyRequests, "slow down"), "is busy and turned this device away for now: try again in a minute; it said \"slow down\""},
		{"a request it cannot read", status(http.StatusBadRequest, "bad name"), "refused a request it could not read"},
		{"never answers", tcpServer(t, func(c net.Conn) { io.Copy(io.Discard, c) }), "does not answer (is `ferry-cli relay` running there, and is the address right?): no answer in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(cmd string, code int, stderr string) {
				t.Helper()
				line := oneLine(t, stderr, cmd)
				if code != 1 || !strings.Contains(line, tc.addr+" "+tc.says) {
					t.Errorf("%s: exit %d, %q; want it to say %q", cmd, code, line, tc.addr+" "+tc.says)
				}
				for _, raw := range []string{"tcp ", "EOF", "%!", "readLoop", "malformed", "refused the request:", "Too Many Requests", "through relay " + tc.addr + ":"} {
					if strings.Contains(line, raw) {
						t.Errorf("%s: %q holds the Go error's %q", cmd, line, raw)
					}
				}
			}
			code, _, stderr := runCLI(t, "send", "--config", a.dir, "--relay", tc.addr, "--to", "Desktop", file)
			check("send", code, stderr)
			code, _, stderr = runCLI(t, "receive", "--config", b.dir, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-discovery",
				"--localsend=false", "--anywhere", "--relay", tc.addr)
			check("receive", code, stderr)
		})
	}
}
