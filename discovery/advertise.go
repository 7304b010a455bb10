package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/grandcat/zeroconf"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Service is what this device advertises.
type Service struct {
	Name string // device name; the instance label is derived from it
	ID   string // device ID (full base32 form)
	// Addrs are the device's listeners (Engine.Addrs): the port of each kind
	// that has a TXT key is advertised (the host is each interface's
	// address); the SRV record points at the first of them.
	Addrs []addr.Addr
	OS    string // default runtime.GOOS
}

// port is the port svc listens on for kind, 0 when none (or not a port).
func (svc Service) port(kind addr.Kind) int {
	a, ok := addr.First(svc.Addrs, kind)
	if !ok {
		return 0
	}
	_, p, err := net.SplitHostPort(a.HostPort())
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return -1
	}
	return n
}

// same reports whether svc and o advertise the same.
func (svc Service) same(o Service) bool {
	return svc.Name == o.Name && svc.ID == o.ID && svc.OS == o.OS && slices.Equal(svc.Addrs, o.Addrs)
}

// srvPort is the port the SRV record points at: the first advertised one.
func (svc Service) srvPort() int {
	for _, p := range txtPorts {
		if n := svc.port(p.kind); n > 0 {
			return n
		}
	}
	return 0
}

// AdvertiseOption tunes an Advertiser.
type AdvertiseOption func(*advertiseOptions)

type advertiseOptions struct {
	poll       time.Duration
	interfaces func() ([]net.Interface, error)
	logf       func(string, ...any)
}

// WithInterfacePoll sets how often interfaces are checked for changes
// (default 3 s); a change re-registers the service.
func WithInterfacePoll(d time.Duration) AdvertiseOption {
	return func(o *advertiseOptions) { o.poll = d }
}

// WithInterfaceLister replaces net.Interfaces (tests).
func WithInterfaceLister(f func() ([]net.Interface, error)) AdvertiseOption {
	return func(o *advertiseOptions) { o.interfaces = f }
}

// WithAdvertiseLog receives debug messages.
func WithAdvertiseLog(f func(string, ...any)) AdvertiseOption {
	return func(o *advertiseOptions) { o.logf = f }
}

// Advertiser keeps this device's mDNS advertisement up to date until Close.
type Advertiser struct {
	opts advertiseOptions
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex // guards the fields below
	svc    Service
	server *zeroconf.Server
	regSvc Service         // what server advertises
	regIfs []net.Interface // where
	ifKey  string
	err    error
	closed bool
}

// Advertise starts advertising svc on every multicast interface and keeps
// doing so as interfaces come and go. With no usable interface yet it
// still succeeds and registers as soon as one appears (Err says why not).
func Advertise(svc Service, opts ...AdvertiseOption) (*Advertiser, error) {
	o := advertiseOptions{poll: 3 * time.Second, interfaces: net.Interfaces}
	for _, f := range opts {
		f(&o)
	}
	svc, err := validService(svc)
	if err != nil {
		return nil, fmt.Errorf("advertise: %w", err)
	}
	a := &Advertiser{opts: o, svc: svc, stop: make(chan struct{}), done: make(chan struct{})}
	a.mu.Lock()
	a.registerLocked()
	a.mu.Unlock()
	go a.watch()
	return a, nil
}

func validService(svc Service) (Service, error) {
	id, err := normalizeID(svc.ID)
	if err != nil {
		return svc, err
	}
	svc.ID = id
	svc.Addrs = slices.Clone(svc.Addrs)
	for _, p := range txtPorts {
		if svc.port(p.kind) < 0 {
			return svc, fmt.Errorf("the %s listener has no port in 0..65535", p.kind.Label())
		}
	}
	if svc.srvPort() == 0 {
		return svc, errors.New("need a QUIC or TCP port in 1..65535")
	}
	if svc.OS == "" {
		svc.OS = runtime.GOOS
	}
	if len(svc.OS) > maxOSLen || !isToken(svc.OS) {
		return svc, fmt.Errorf("bad OS %q", svc.OS)
	}
	name, err := cleanName(instanceLabel(svc.Name))
	if err != nil {
		name = "Ferry"
	}
	svc.Name = name
	return svc, nil
}

// Update changes what is advertised (name, ports) and re-announces.
func (a *Advertiser) Update(svc Service) error {
	svc, err := validService(svc)
	if err != nil {
		return fmt.Errorf("advertise update: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("advertise update: advertiser closed")
	}
	if svc.same(a.svc) && a.server != nil {
		return nil
	}
	a.svc = svc
	a.registerLocked()
	return a.err
}

// Service returns what is being advertised (after validation).
func (a *Advertiser) Service() Service {
	a.mu.Lock()
	defer a.mu.Unlock()
	svc := a.svc
	svc.Addrs = slices.Clone(svc.Addrs)
	return svc
}

// Err reports why the last registration failed, or nil when advertising.
func (a *Advertiser) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Close sends goodbye packets and stops advertising.
func (a *Advertiser) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	close(a.stop)
	a.mu.Unlock()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	a.shutdownLocked()
	return nil
}

func (a *Advertiser) watch() {
	defer close(a.done)
	t := time.NewTicker(a.opts.poll)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		ifaces, err := multicastInterfaces(a.opts.interfaces)
		if err != nil {
			continue
		}
		key := ifaceKey(ifaces)
		a.mu.Lock()
		if key != a.ifKey && !a.closed {
			if a.opts.logf != nil {
				a.opts.logf("advertise: interfaces changed, re-registering")
			}
			a.registerLocked()
		}
		a.mu.Unlock()
	}
}

// hostName is our SRV target: unique per device, so two Ferry instances on
// one host (or in namespaces sharing a host name) and the system's own
// responder never claim the same A records.
func hostName(id string) string {
	// zeroconf appends the domain itself.
	return "ferry-" + strings.ToLower(id[:16])
}

// registerLocked (re)registers the service with zeroconf. Called with a.mu held.
func (a *Advertiser) registerLocked() {
	a.shutdownLocked()
	ifaces, err := multicastInterfaces(a.opts.interfaces)
	if err != nil {
		a.err = fmt.Errorf("advertise: list interfaces: %w", err)
		return
	}
	a.ifKey = ifaceKey(ifaces)
	ips, err := a.svc.ipsOn(ifaces)
	if err != nil {
		a.err = fmt.Errorf("advertise: %w", err)
		return
	}
	srv, err := zeroconf.RegisterProxy(presentationLabel(instanceLabel(a.svc.Name)), ServiceType, Domain, a.svc.srvPort(),
		hostName(a.svc.ID), ips, buildTXT(a.svc), ifaces)
	if err != nil {
		a.err = fmt.Errorf("advertise: %w", err)
		return
	}
	a.server, a.err = srv, nil
	a.regSvc, a.regIfs = a.svc, ifaces
	solicitAnnouncement(ifaces, presentationLabel(instanceLabel(a.svc.Name)))
}

// presentationLabel escapes a raw DNS label the way miekg/dns prints it
// ("My Mac" -> "My\ Mac", non-ASCII bytes as \DDD). zeroconf compares
// query names, which miekg/dns unpacks into this form, with its instance
// name as a plain string: registered unescaped, a name with a space or
// non-ASCII letter would never be answered when asked for directly.
func presentationLabel(raw string) string {
	if raw == "" || len(raw) > 63 {
		return raw
	}
	wire := append([]byte{byte(len(raw))}, raw...)
	wire = append(wire, 0)
	s, _, err := dns.UnpackDomainName(wire, 0)
	if err != nil {
		return raw
	}
	return strings.TrimSuffix(s, ".")
}

// shutdownLocked stops the zeroconf server and says goodbye. zeroconf's
// Shutdown sends a goodbye itself, but its announcement goroutine (which
// Shutdown does not stop) can send one more announcement just after it,
// which would keep us listed on other devices until their TTL; ours goes
// out after the server's sockets are closed, so it is the last word.
// Called with a.mu held.
func (a *Advertiser) shutdownLocked() {
	if a.server == nil {
		return
	}
	a.server.Shutdown()
	a.server = nil
	sendMDNS(a.regIfs, goodbyeMsg(a.regSvc))
}

// goodbyeMsg is svc's PTR, SRV and TXT records with TTL 0 (RFC 6762 10.1).
func goodbyeMsg(svc Service) *dns.Msg {
	inst := presentationLabel(instanceLabel(svc.Name)) + "." + ServiceType + "." + Domain
	port := svc.srvPort()
	m := new(dns.Msg)
	m.Response = true
	m.Authoritative = true
	m.Answer = []dns.RR{
		&dns.PTR{Hdr: dns.RR_Header{Name: ServiceType + "." + Domain, Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: inst},
		&dns.SRV{Hdr: dns.RR_Header{Name: inst, Rrtype: dns.TypeSRV, Class: dns.ClassINET}, Port: uint16(port), Target: hostName(svc.ID) + "." + Domain},
		&dns.TXT{Hdr: dns.RR_Header{Name: inst, Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: buildTXT(svc)},
	}
	return m
}

// sendMDNS multicasts m on every interface (IPv4 and IPv6) from port 5353
// (RFC 6762 11: responders such as Avahi ignore responses from other
// ports), shared through SO_REUSEADDR; from an ephemeral port if that fails.
func sendMDNS(ifaces []net.Interface, m *dns.Msg) {
	buf, err := m.Pack()
	if err != nil {
		return
	}
	// Go binds a multicast listen address as the wildcard with SO_REUSEADDR.
	u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(224, 0, 0, 0), Port: mdnsPort})
	if err != nil {
		u, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	}
	if err == nil {
		c := ipv4.NewPacketConn(u)
		for _, ifi := range ifaces {
			_, _ = c.WriteTo(buf, &ipv4.ControlMessage{IfIndex: ifi.Index}, &net.UDPAddr{IP: mdnsGroup4, Port: mdnsPort})
		}
		u.Close()
	}
	u, err = net.ListenUDP("udp6", &net.UDPAddr{IP: net.ParseIP("ff02::"), Port: mdnsPort})
	if err != nil {
		u, err = net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6unspecified})
	}
	if err == nil {
		c := ipv6.NewPacketConn(u)
		for _, ifi := range ifaces {
			_, _ = c.WriteTo(buf, &ipv6.ControlMessage{IfIndex: ifi.Index}, &net.UDPAddr{IP: mdnsGroup6, Port: mdnsPort})
		}
		u.Close()
	}
}

// solicitAnnouncement asks for our own instance's records over multicast.
// zeroconf's responder answers by multicast on every interface, which
// announces us at once; its own first announcement only follows its
// probes, up to 500 ms later.
func solicitAnnouncement(ifaces []net.Interface, label string) {
	// label is in presentation form, which Pack turns back into the raw label.
	m := new(dns.Msg)
	name := label + "." + ServiceType + "." + Domain
	m.Question = []dns.Question{
		{Name: name, Qtype: dns.TypeSRV, Qclass: dns.ClassINET},
		{Name: name, Qtype: dns.TypeTXT, Qclass: dns.ClassINET},
	}
	sendMDNS(ifaces, m)
}

// ErrNotListening reports that the device listens on none of its
// interfaces' addresses (on loopback alone: --listen 127.0.0.1:PORT), so
// that no device on the network could reach an address advertised there.
var ErrNotListening = errors.New("it listens on no address of this device's network interfaces")

// ipsOn lists the addresses of ifaces to advertise svc at: those its
// listeners take connections on (reachedAt). ErrNoMulticast when ifaces
// have none, ErrNotListening when svc listens on none of them.
func (svc Service) ipsOn(ifaces []net.Interface) ([]string, error) {
	all := advertisedIPs(ifaces)
	if len(ifaces) == 0 || len(all) == 0 {
		return nil, ErrNoMulticast
	}
	ips := svc.reachedAt(all)
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w (%s)", ErrNotListening, svc.listenHosts())
	}
	return ips, nil
}

// reachedAt keeps of ips (the interfaces' addresses) those svc's listeners
// take connections on: all of them for a listener on every address ("",
// "::"; "0.0.0.0" the IPv4 ones), else the listeners' own. A device
// listening on 127.0.0.1 alone advertised its LAN addresses with that
// port, where nothing answered ("Nothing is listening at
// 192.168.1.5:47950"), and a sender tried them until it gave up.
func (svc Service) reachedAt(ips []string) []string {
	var v4 bool
	own := map[netip.Addr]bool{}
	for _, p := range txtPorts {
		a, ok := addr.First(svc.Addrs, p.kind)
		if !ok {
			continue
		}
		host, _, err := net.SplitHostPort(a.HostPort())
		if err != nil {
			return ips // not host:port: nothing to narrow by
		}
		ip, err := netip.ParseAddr(host)
		switch {
		case host == "" || err == nil && ip.IsUnspecified() && ip.Is6():
			return ips
		case err != nil:
			return ips // a name: whatever it resolves to
		case ip.IsUnspecified():
			v4 = true
		default:
			own[ip.Unmap().WithZone("")] = true
		}
	}
	var out []string
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if v4 && ip.Unmap().Is4() || own[ip.Unmap().WithZone("")] {
			out = append(out, s)
		}
	}
	return out
}

// listenHosts names svc's listeners' hosts, for why it is not advertised.
func (svc Service) listenHosts() string {
	var hosts []string
	for _, p := range txtPorts {
		if a, ok := addr.First(svc.Addrs, p.kind); ok {
			if h, _, err := net.SplitHostPort(a.HostPort()); err == nil && !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return "listening on " + strings.Join(hosts, ", ") + " alone"
}

// advertisedIPs lists the unicast addresses of ifaces.
func advertisedIPs(ifaces []net.Interface) []string {
	var out []string
	for _, ifi := range ifaces {
		for _, p := range interfacePrefixes(ifi) {
			ip := p.Addr()
			if ip.IsLoopback() || ip.IsMulticast() || ip.IsUnspecified() {
				continue
			}
			out = append(out, ip.String())
		}
	}
	return out
}

// interfacePrefixes lists an interface's addresses with their prefix
// lengths (IPv4-mapped addresses unmapped).
func interfacePrefixes(ifi net.Interface) []netip.Prefix {
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ones, _ := ipn.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out
}
