package localsend

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netns"
)

// TestScanOwnSubnet: the /24 register scan, run inside a namespace the
// test creates (never on this machine's interfaces): the subnets are the
// namespace's own, the device that answers is reported with the key that
// proved it, this device is not, and the registers in flight stay within
// Parallel.
func TestScanOwnSubnet(t *testing.T) {
	a, b, ipA, ipB, _, _ := netns.Pair(t)
	p := newPeer(t, a, "phone")
	peerServer(t, a, ipA, p)

	var own []netip.Prefix
	var err error
	b.Do(func() { own, err = OwnSubnets() })
	want := netip.MustParsePrefix(ipB + "/24").Masked()
	if err != nil || len(own) != 1 || own[0] != want {
		t.Fatalf("own subnets in the namespace: %v %v, want [%v]", own, err, want)
	}

	// The /30 of the own /24 that holds the peer (.1) and this device
	// (.2): the namespace's thread dials one socket at a time, so hosts
	// that never answer are left to TestScanBounds.
	sub := netip.PrefixFrom(netip.MustParseAddr(ipA), 30).Masked()
	cl := NewClient(ClientConfig{Info: Info{Alias: "ferry", Port: DefaultPort, Protocol: "https"}, Cert: testCert(t, 0), Dial: b.Dial})
	var mu sync.Mutex
	var found []Device
	err = Scan(context.Background(), ScanConfig{Client: cl, Subnets: []netip.Prefix{sub}, PerHost: 10 * time.Second, Total: time.Minute,
		OnDevice: func(d Device) { mu.Lock(); found = append(found, d); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := x509.ParseCertificate(p.Cert.Certificate[0])
	if len(found) != 1 || found[0].Alias != "phone" || found[0].Addr.String() != ipA || found[0].Via != "scan" || !found[0].Verified ||
		!SameFingerprint(found[0].Fingerprint, p.Fingerprint) || found[0].KeyHash != sha256.Sum256(pc.RawSubjectPublicKeyInfo) {
		t.Fatalf("found %+v", found)
	}
	_, _, _, regs, _, _ := p.Snapshot()
	if len(regs) != 1 || regs[0].Addr != ipB {
		t.Fatalf("the peer saw registers %+v", regs)
	}
}

// TestScanBounds: the scan keeps at most Parallel hosts in flight, gives
// each PerHost, covers each host of the subnet once (not the network and
// broadcast addresses), and ends at Total or when its context does. No
// socket is opened: every host "hangs" until its bound.
func TestScanBounds(t *testing.T) {
	var inFlight, most, dials atomic.Int32
	var mu sync.Mutex
	hosts := map[string]bool{}
	hang := func(ctx context.Context, _, addr string) (net.Conn, error) {
		dials.Add(1)
		mu.Lock()
		hosts[addr] = true
		mu.Unlock()
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	cl := NewClient(ClientConfig{Cert: testCert(t, 0), Dial: hang})
	sub := netip.MustParsePrefix("192.0.2.0/26") // TEST-NET: 62 hosts
	if err := Scan(context.Background(), ScanConfig{Client: cl, Subnets: []netip.Prefix{sub}, Parallel: 4, PerHost: 5 * time.Millisecond, Total: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m != 4 {
		t.Errorf("%d hosts in flight at most, Parallel is 4", m)
	}
	if n := dials.Load(); n != 62 || len(hosts) != 62 || hosts["192.0.2.0:53317"] || hosts["192.0.2.63:53317"] {
		t.Errorf("%d dials to %d hosts", n, len(hosts))
	}
	if n := inFlight.Load(); n != 0 {
		t.Errorf("%d dials still running after Scan returned", n)
	}

	// Total ends the scan long before every host had its PerHost.
	dials.Store(0)
	if err := Scan(context.Background(), ScanConfig{Client: cl, Subnets: []netip.Prefix{sub}, Parallel: 2, PerHost: time.Hour, Total: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials under a Total shorter than one host's bound, want the first 2", n)
	}
	// A cancelled context: nothing is dialled.
	dials.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Scan(ctx, ScanConfig{Client: cl, Subnets: []netip.Prefix{sub}}); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials after the context ended", n)
	}
}
