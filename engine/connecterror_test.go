package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
)

// A name that no dial could resolve (DNS: no such host) is said as such,
// once, and ends a send's first attempt (core.HostNotFoundError); any
// other failure among the dials is a connection that may come right.
func TestUnknownHost(t *testing.T) {
	nx := func(name string) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}}
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "a.lan", IsTimeout: true}}
	for _, c := range []struct {
		err  error
		host string
	}{
		{nx("a.lan"), "a.lan"},
		{errors.Join(fmt.Errorf("quic: %w", nx("a.lan")), fmt.Errorf("tcp: %w", nx("a.lan"))), "a.lan"},
		{errors.Join(fmt.Errorf("quic: %w", nx("a.lan")), fmt.Errorf("tcp: %w", refused)), ""},
		{errors.Join(nx("a.lan"), nx("b.lan")), ""},
		{fmt.Errorf("x: %w", errors.Join(nx("a.lan"), refused)), ""},
		{timeout, ""},
		{refused, ""},
		{io.EOF, ""},
	} {
		if got := unknownHost(c.err); got != c.host {
			t.Errorf("%v: %q, want %q", c.err, got, c.host)
		}
		err := connectError(c.err)
		var hn *core.HostNotFoundError
		if errors.As(err, &hn) != (c.host != "") {
			t.Errorf("%v: connectError gave %v", c.err, err)
		}
	}
	if got := core.Sentence(connectError(nx("nosuchhost.invalid"))); got != "There is no host named nosuchhost.invalid (check the name)." {
		t.Errorf("said %q", got)
	}
}
