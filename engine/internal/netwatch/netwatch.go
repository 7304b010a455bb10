// Package netwatch tells when this device's network changes: an address
// added or removed, a link going up or down, a route added or removed. The
// transports use it to notice that the path a session uses may have moved
// (connection migration) or gone (a TCP session to reconnect).
//
// On Linux it listens to the kernel's routing netlink messages and reports
// every change at once; elsewhere it compares the list of addresses every
// Options.Poll (route changes are then not seen, only address changes).
package netwatch

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Options configure a Watcher. The zero value is usable.
type Options struct {
	// Poll is how often the addresses are compared where the platform
	// gives no change notifications (or they cannot be had). Zero means 2 s.
	Poll time.Duration
	// Settle is how long a burst of kernel messages (one address change
	// brings several) is let to finish before it counts as one change.
	// Zero means 20 ms.
	Settle time.Duration
	// ListAddrs lists the addresses of the interfaces that are up; nil
	// reads them from net.Interfaces. Tests replace it.
	ListAddrs func() ([]net.Addr, error)
}

func (o Options) withDefaults() Options {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 20 * time.Millisecond
	}
	if o.ListAddrs == nil {
		o.ListAddrs = interfaceAddrs
	}
	return o
}

// Watcher watches the network of this device. Create it with New and end
// it with Close; its methods are safe for concurrent use.
type Watcher struct {
	opts Options
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	changed chan struct{}
	addrs   []netip.Addr
	gen     uint64
	how     string
}

// New starts watching. It never fails: where notifications cannot be had,
// it polls (How says which).
func New(opts Options) *Watcher {
	notify, closeFn, err := subscribe()
	if err != nil {
		w := newPolling(opts)
		w.how = "poll (" + err.Error() + ")"
		return w
	}
	w := newWatcher(opts)
	w.how = "netlink"
	w.wg.Go(func() { w.listen(notify) })
	w.wg.Go(func() {
		<-w.done
		closeFn()
	})
	return w
}

func newPolling(opts Options) *Watcher {
	w := newWatcher(opts)
	w.wg.Go(w.poll)
	return w
}

func newWatcher(opts Options) *Watcher {
	w := &Watcher{opts: opts.withDefaults(), done: make(chan struct{}), changed: make(chan struct{})}
	w.addrs = w.read()
	return w
}

// How says how changes are watched: "netlink", or "poll (why)".
func (w *Watcher) How() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.how
}

// Changed returns a channel that is closed at the next change after the
// call. Take a new one after each change.
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Addrs returns the addresses a path can start from now: unicast addresses
// of interfaces that are up, without loopback and link-local ones.
func (w *Watcher) Addrs() []netip.Addr {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.addrs)
}

// Generation counts the changes seen so far.
func (w *Watcher) Generation() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// Close stops watching and waits for the watcher's goroutines.
func (w *Watcher) Close() error {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	return nil
}

// listen turns kernel notifications into changes, a burst at a time.
func (w *Watcher) listen(notify <-chan struct{}) {
	for {
		select {
		case <-w.done:
			return
		case _, ok := <-notify:
			if !ok {
				w.poll() // the socket failed: fall back to polling
				return
			}
		}
		t := time.NewTimer(w.opts.Settle)
	settle:
		for {
			select {
			case <-w.done:
				t.Stop()
				return
			case <-notify:
			case <-t.C:
				break settle
			}
		}
		w.update(true)
	}
}

// poll compares the addresses every Options.Poll.
func (w *Watcher) poll() {
	t := time.NewTicker(w.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.update(false)
		}
	}
}

// update reads the addresses and reports a change: always when the kernel
// said something changed (routes are not in the list), else only when the
// list differs.
func (w *Watcher) update(always bool) {
	addrs := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !always && slices.Equal(addrs, w.addrs) {
		return
	}
	w.addrs = addrs
	w.gen++
	close(w.changed)
	w.changed = make(chan struct{})
}

// read lists the usable addresses, sorted.
func (w *Watcher) read() []netip.Addr {
	as, err := w.opts.ListAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		out = append(out, Usable(a)...)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}

// interfaceAddrs lists the addresses of the interfaces that are up.
func interfaceAddrs() ([]net.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []net.Addr
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 {
			continue
		}
		as, err := ifi.Addrs()
		if err != nil {
			continue
		}
		out = append(out, as...)
	}
	return out, nil
}

// Usable returns the address of an interface address when a path can start
// from it: a unicast address, not loopback or link-local.
func Usable(a net.Addr) []netip.Addr {
	var ip net.IP
	switch a := a.(type) {
	case *net.IPNet:
		ip = a.IP
	case *net.IPAddr:
		ip = a.IP
	default:
		return nil
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return nil
	}
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsLinkLocalUnicast() {
		return nil
	}
	return []netip.Addr{addr}
}

// Reaches reports whether a path from this device's networks may reach
// ip, given the addresses of its interfaces (ifaddrs, as ListAddrs gives
// them): loopback always; a public address always (routed); a private,
// unique-local or link-local one only inside the prefix of an interface's
// address. A device last seen at 192.168.1.20 does not answer there from
// a café's 10.0.0.0/24: its packets go to the café's router, which drops
// them (a private network routed elsewhere, a VPN's, has its interface
// here).
func Reaches(ip netip.Addr, ifaddrs []net.Addr) bool {
	ip = ip.Unmap().WithZone("")
	switch {
	case ip.IsLoopback() || ip.IsUnspecified():
		return true
	case !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && ip.IsGlobalUnicast():
		return true
	}
	for _, a := range ifaddrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		base, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ones, bits := n.Mask.Size()
		switch {
		case bits == 32: // an IPv4 address, often in its 16-byte form
			base = base.Unmap()
		case base.Is4In6() && ones >= 96:
			base, ones = base.Unmap(), ones-96
		}
		if p, err := base.Prefix(ones); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}

// InterfaceAddrs lists the addresses of this device's interfaces that are
// up (for Reaches).
func InterfaceAddrs() ([]net.Addr, error) { return interfaceAddrs() }
