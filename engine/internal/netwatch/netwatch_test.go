package netwatch

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeInterfaces is an interface list a test changes; its addresses come
// through a hook because net.Interface.Addrs asks the kernel.
type fakeInterfaces struct {
	mu    sync.Mutex
	addrs []net.Addr
}

func (f *fakeInterfaces) set(addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs = nil
	for _, a := range addrs {
		_, n, err := net.ParseCIDR(a)
		if err != nil {
			panic(err)
		}
		ip, _, _ := net.ParseCIDR(a)
		f.addrs = append(f.addrs, &net.IPNet{IP: ip, Mask: n.Mask})
	}
}

func (f *fakeInterfaces) get() ([]net.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.addrs), nil
}

func TestUsable(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"192.168.1.20/24", true},
		{"10.77.1.1/32", true},
		{"2001:db8::5/64", true},
		{"127.0.0.1/8", false},
		{"::1/128", false},
		{"fe80::1/64", false},
		{"169.254.3.4/16", false},
		{"224.0.0.251/32", false},
		{"0.0.0.0/0", false},
	} {
		ip, n, err := net.ParseCIDR(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := Usable(&net.IPNet{IP: ip, Mask: n.Mask})
		if (len(got) == 1) != c.want {
			t.Errorf("Usable(%s) = %v, want usable=%v", c.in, got, c.want)
		}
	}
	if got := Usable(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1)}); got != nil {
		t.Errorf("Usable of a UDP address = %v", got)
	}
}

// TestPollSeesAddressChanges: where the platform gives no notifications,
// an address that comes or goes is reported within a poll period.
func TestPollSeesAddressChanges(t *testing.T) {
	f := &fakeInterfaces{}
	f.set("10.0.0.1/24")
	w := newPolling(Options{Poll: 5 * time.Millisecond, ListAddrs: f.get})
	defer w.Close()
	if got := w.Addrs(); !slices.Equal(got, []netip.Addr{netip.MustParseAddr("10.0.0.1")}) {
		t.Fatalf("Addrs = %v", got)
	}
	ch := w.Changed()
	f.set("10.0.0.1/24", "10.0.1.7/24", "fe80::2/64")
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported")
	}
	want := []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.1.7")}
	if got := w.Addrs(); !slices.Equal(got, want) {
		t.Fatalf("Addrs = %v, want %v", got, want)
	}
	if w.Generation() != 1 {
		t.Errorf("Generation = %d, want 1", w.Generation())
	}
}
