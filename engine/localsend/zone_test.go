package localsend

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
)

// A device found at an IPv6 address with a zone (link-local, the only
// addresses on some links: "[fe80::1%eth0]:53317") is reached: the zone is
// escaped in the request's URL ("%25eth0"). It was written in as it is,
// which no URL parses ("invalid URL escape"), so such a device could never
// be asked for its name, registered with or sent to. The loopback address
// stands in for a link-local one here: the kernel takes a zone on it.
func TestTargetWithAZone(t *testing.T) {
	lo, err := net.InterfaceByIndex(1)
	if err != nil || lo.Flags&net.FlagLoopback == 0 {
		t.Skip("no loopback interface at index 1")
	}
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	s, err := NewServer(ServerConfig{Info: Info{Alias: "rx"}, Cert: testCert(t, 0), Receiver: newMemReceiver()})
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
	port := ln.Addr().(*net.TCPAddr).Port
	addr := net.JoinHostPort("::1%"+lo.Name, strconv.Itoa(port))
	cl := NewClient(ClientConfig{Info: Info{Alias: "tx"}, Cert: testCert(t, 1)})
	info, err := cl.DeviceInfo(context.Background(), Target{Addr: addr, Fingerprint: s.Fingerprint()})
	if err != nil {
		t.Fatalf("DeviceInfo(%s): %v", addr, err)
	}
	if info.Alias != "rx" {
		t.Errorf("alias %q, want rx", info.Alias)
	}
}
