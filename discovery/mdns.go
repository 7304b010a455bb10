package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/ferrydrop/ferry/internal/clock"
)

// The mDNS port and groups (RFC 6762).
const mdnsPort = 5353

var (
	mdnsGroup4 = net.IPv4(224, 0, 0, 251)
	mdnsGroup6 = net.ParseIP("ff02::fb")
)

// Bounds on what one mDNS message may make us do.
const (
	maxRecordsPerMsg   = 128
	maxInstancesPerMsg = 16
	maxAsked           = 256
	recvBufSize        = 9000 // RFC 6762 17: messages up to 9000 bytes
)

var serviceFQDN = canonicalName(ServiceType + "." + Domain)

func canonicalName(s string) string { return strings.ToLower(dns.Fqdn(s)) }

// ErrNoMulticast reports that no mDNS socket could be opened or joined.
var ErrNoMulticast = errors.New("no multicast-capable network interface could join mDNS")

// mdnsConn holds the IPv4 and IPv6 mDNS sockets. Either may be nil.
type mdnsConn struct {
	v4 *ipv4.PacketConn
	v6 *ipv6.PacketConn

	mu     sync.Mutex // guards joined
	joined map[string]bool
}

// multicastInterfaces returns the up, multicast-capable interfaces.
func multicastInterfaces(list func() ([]net.Interface, error)) ([]net.Interface, error) {
	all, err := list()
	if err != nil {
		return nil, err
	}
	var out []net.Interface
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagMulticast != 0 && ifi.Flags&net.FlagLoopback == 0 {
			out = append(out, ifi)
		}
	}
	return out, nil
}

// openMDNS binds UDP 5353 (shared with other responders through
// SO_REUSEADDR, which Go sets for multicast listen addresses) on both
// families. The caller joins the groups with join.
func openMDNS() (*mdnsConn, error) {
	c := &mdnsConn{joined: map[string]bool{}}
	var errs []error
	if u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(224, 0, 0, 0), Port: mdnsPort}); err != nil {
		errs = append(errs, fmt.Errorf("udp4: %w", err))
	} else {
		c.v4 = ipv4.NewPacketConn(u)
		_ = c.v4.SetControlMessage(ipv4.FlagInterface, true)
		_ = c.v4.SetMulticastTTL(255)
		_ = c.v4.SetMulticastLoopback(true)
	}
	if u, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.ParseIP("ff02::"), Port: mdnsPort}); err != nil {
		errs = append(errs, fmt.Errorf("udp6: %w", err))
	} else {
		c.v6 = ipv6.NewPacketConn(u)
		_ = c.v6.SetControlMessage(ipv6.FlagInterface, true)
		_ = c.v6.SetMulticastHopLimit(255)
		_ = c.v6.SetMulticastLoopback(true)
	}
	if c.v4 == nil && c.v6 == nil {
		return nil, fmt.Errorf("open mdns: %w", errors.Join(errs...))
	}
	return c, nil
}

// join joins the mDNS groups on every interface not yet joined and returns
// how many interfaces are joined in total.
func (c *mdnsConn) join(ifaces []net.Interface) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ifi := range ifaces {
		key4 := fmt.Sprintf("4/%d/%s", ifi.Index, ifi.Name)
		key6 := fmt.Sprintf("6/%d/%s", ifi.Index, ifi.Name)
		if c.v4 != nil && !c.joined[key4] {
			if err := c.v4.JoinGroup(&ifi, &net.UDPAddr{IP: mdnsGroup4}); err == nil || isAlreadyJoined(err) {
				c.joined[key4] = true
			}
		}
		if c.v6 != nil && !c.joined[key6] {
			if err := c.v6.JoinGroup(&ifi, &net.UDPAddr{IP: mdnsGroup6}); err == nil || isAlreadyJoined(err) {
				c.joined[key6] = true
			}
		}
	}
	// Forget interfaces that vanished so a new one with the same index rejoins.
	present := map[string]bool{}
	for _, ifi := range ifaces {
		present[fmt.Sprintf("4/%d/%s", ifi.Index, ifi.Name)] = true
		present[fmt.Sprintf("6/%d/%s", ifi.Index, ifi.Name)] = true
	}
	n := 0
	for k := range c.joined {
		if !present[k] {
			delete(c.joined, k)
			continue
		}
		n++
	}
	return n
}

func isAlreadyJoined(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

func (c *mdnsConn) close() {
	if c.v4 != nil {
		c.v4.Close()
	}
	if c.v6 != nil {
		c.v6.Close()
	}
}

// send multicasts msg on every interface.
func (c *mdnsConn) send(ifaces []net.Interface, msg *dns.Msg) error {
	buf, err := msg.Pack()
	if err != nil {
		return fmt.Errorf("pack mdns: %w", err)
	}
	sent := 0
	for _, ifi := range ifaces {
		if c.v4 != nil {
			if _, err := c.v4.WriteTo(buf, &ipv4.ControlMessage{IfIndex: ifi.Index}, &net.UDPAddr{IP: mdnsGroup4, Port: mdnsPort}); err == nil {
				sent++
			}
		}
		if c.v6 != nil {
			if _, err := c.v6.WriteTo(buf, &ipv6.ControlMessage{IfIndex: ifi.Index}, &net.UDPAddr{IP: mdnsGroup6, Port: mdnsPort}); err == nil {
				sent++
			}
		}
	}
	if sent == 0 && len(ifaces) > 0 {
		return fmt.Errorf("send mdns: %w", ErrNoMulticast)
	}
	return nil
}

// browseQuery is the PTR question for our service. It carries no known
// answers, so every responder answers and refreshes our table.
func browseQuery() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(serviceFQDN, dns.TypePTR)
	m.RecursionDesired = false
	m.Id = 0
	return m
}

// Run browses until ctx ends: it opens the mDNS sockets, queries at once,
// then periodically, follows interface changes, expires peers and probes
// remembered ones. It keeps running without a network (or when UDP 5353
// cannot be opened) and picks mDNS up when that changes; Err says what is
// wrong meanwhile. It returns ctx's error once every goroutine it started
// has stopped.
func (d *Discovery) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.lookAgain()
	var wg sync.WaitGroup
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	start(func(ctx context.Context) {
		t, tick := d.opts.Clock.NewTicker(goodbyeGrace / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				d.expire()
			}
		}
	})
	start(d.probeLoop)
	start(d.mdnsLoop)
	<-ctx.Done()
	wg.Wait()
	return ctx.Err()
}

// Err reports why mDNS discovery is not working right now (no usable
// interface, UDP 5353 unavailable), or nil. Remembered and manual peers are
// still probed meanwhile.
func (d *Discovery) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mdnsErr
}

func (d *Discovery) setErr(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil && (d.mdnsErr == nil || d.mdnsErr.Error() != err.Error()) {
		d.logf("discovery: %v", err)
	}
	d.mdnsErr = err
}

// currentInterfaces refreshes our interface view and returns the
// multicast-capable ones.
func (d *Discovery) currentInterfaces() []net.Interface {
	all, err := d.opts.Interfaces()
	if err != nil {
		d.setErr(fmt.Errorf("discovery: list interfaces: %w", err))
		return nil
	}
	d.setInterfaces(all)
	mc, _ := multicastInterfaces(func() ([]net.Interface, error) { return all, nil })
	return mc
}

// mdnsLoop opens the mDNS sockets (retrying every InterfacePoll until it
// can) and then browses until ctx ends.
func (d *Discovery) mdnsLoop(ctx context.Context) {
	var conn *mdnsConn
	ifaces := d.currentInterfaces()
	for {
		var err error
		if conn, err = openMDNS(); err == nil {
			break
		}
		d.setErr(fmt.Errorf("discovery: %w", err))
		t, fired := d.opts.Clock.NewTimer(d.opts.InterfacePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-fired:
		}
		ifaces = d.currentInterfaces()
	}
	var wg sync.WaitGroup
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	var ifMu sync.Mutex // guards cur
	cur := ifaces
	// The fingerprint of cur as it was: ifaceKey(cur) later would read
	// cur's addresses as they are then, and a new address would never
	// show as a change.
	key := ifaceKey(ifaces)
	current := func() []net.Interface { ifMu.Lock(); defer ifMu.Unlock(); return cur }
	joined := func(n int) {
		if n == 0 {
			d.setErr(fmt.Errorf("discovery: %w", ErrNoMulticast))
		} else {
			d.setErr(nil)
		}
	}
	joined(conn.join(ifaces))
	if conn.v4 != nil {
		start(func(ctx context.Context) { d.recvLoop(ctx, conn, current, read4(conn.v4)) })
	}
	if conn.v6 != nil {
		start(func(ctx context.Context) { d.recvLoop(ctx, conn, current, read6(conn.v6)) })
	}
	requery := make(chan struct{}, 1)
	start(func(ctx context.Context) { d.queryLoop(ctx, conn, current, requery) })
	t, tick := d.opts.Clock.NewTicker(d.opts.InterfacePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			conn.close() // unblocks the receive loops
			wg.Wait()
			return
		case <-tick:
		}
		now := d.currentInterfaces()
		nowKey := ifaceKey(now)
		if nowKey == key {
			continue
		}
		key = nowKey
		d.logf("discovery: interfaces changed: %s", nowKey)
		d.lookAgain() // a device not seen on the old network may be on the new one
		joined(conn.join(now))
		ifMu.Lock()
		cur = now
		ifMu.Unlock()
		poke(requery)
	}
}

// ifaceKey fingerprints an interface list: names, flags and addresses.
func ifaceKey(ifaces []net.Interface) string {
	var b strings.Builder
	for _, ifi := range ifaces {
		fmt.Fprintf(&b, "%d/%s/%v", ifi.Index, ifi.Name, ifi.Flags)
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				b.WriteString("," + a.String())
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// mdnsSender multicasts a message on interfaces: an mdnsConn, or a test's
// count of queries.
type mdnsSender interface {
	send(ifaces []net.Interface, msg *dns.Msg) error
}

// queryLoop sends the browse query: three at first, a second apart, then
// every QueryInterval; on requery (new interfaces) the first ones again.
// A query Unreached asks for (askNow) goes out at once, or againGap after
// the last query when that went out less than againGap ago; every query
// answers the asks made before it.
func (d *Discovery) queryLoop(ctx context.Context, conn mdnsSender, ifaces func() []net.Interface, requery <-chan struct{}) {
	// RFC 6762 5.2: the first queries close together, then a steady pace.
	delays := []time.Duration{0, time.Second, time.Second}
	var last time.Time // when the last query went out
	asked := false     // Unreached asked for a query that has not gone out
	var held clock.Timer
	var release <-chan time.Time
	query := func(first bool) {
		select {
		case <-d.askNow:
		default:
		}
		asked = false
		if held != nil {
			held.Stop()
		}
		on := ifaces()
		if err := conn.send(on, browseQuery()); err != nil {
			d.logf("discovery: %v", err)
		} else if first && len(on) > 0 {
			d.firstQueriesSent()
		}
		last = d.opts.Clock.Now()
	}
	defer func() {
		if held != nil {
			held.Stop()
		}
	}()
	for i := 0; ; i++ {
		query(i == len(delays)-1)
		wait := d.opts.QueryInterval
		if i+1 < len(delays) {
			wait = delays[i+1]
		}
		t, fired := d.opts.Clock.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-fired:
				break waiting
			case <-requery:
				t.Stop()
				i = 0 // new interfaces: query again quickly
				break waiting
			case <-d.askNow:
				asked = true
			case <-release:
			}
			if !asked {
				continue
			}
			switch w := last.Add(againGap).Sub(d.opts.Clock.Now()); {
			case w <= 0:
				query(false)
			case held == nil:
				held, release = d.opts.Clock.NewTimer(w)
			default:
				held.Reset(w)
			}
		}
	}
}

type readFunc func(b []byte) (n, ifIndex int, src net.Addr, err error)

func read4(c *ipv4.PacketConn) readFunc {
	return func(b []byte) (int, int, net.Addr, error) {
		n, cm, src, err := c.ReadFrom(b)
		idx := 0
		if cm != nil {
			idx = cm.IfIndex
		}
		return n, idx, src, err
	}
}

func read6(c *ipv6.PacketConn) readFunc {
	return func(b []byte) (int, int, net.Addr, error) {
		n, cm, src, err := c.ReadFrom(b)
		idx := 0
		if cm != nil {
			idx = cm.IfIndex
		}
		return n, idx, src, err
	}
}

func (d *Discovery) recvLoop(ctx context.Context, conn *mdnsConn, ifaces func() []net.Interface, read readFunc) {
	buf := make([]byte, recvBufSize)
	for {
		n, ifIndex, src, err := read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		var msg dns.Msg
		if err := msg.Unpack(buf[:n]); err != nil || !msg.Response {
			continue
		}
		var from netip.Addr
		if ua, ok := src.(*net.UDPAddr); ok {
			from, _ = netip.AddrFromSlice(ua.IP)
			from = from.Unmap()
		}
		if follow := d.handleMessage(&msg, ifIndex, from); follow != nil {
			_ = conn.send(ifaces(), follow)
		}
	}
}

// instanceRecords gathers one instance's records from a message.
type instanceRecords struct {
	orig    string // instance name as received (the map key is lower case)
	ptrTTL  int64  // -1: no PTR
	srv     *dns.SRV
	txt     *dns.TXT
	goodbye bool
}

// handleMessage folds one mDNS response into the table. It returns a
// follow-up query when a Ferry instance was announced incompletely (for
// example a PTR without SRV/TXT/addresses), or nil.
func (d *Discovery) handleMessage(msg *dns.Msg, ifIndex int, from netip.Addr) *dns.Msg {
	rrs := make([]dns.RR, 0, len(msg.Answer)+len(msg.Extra))
	rrs = append(rrs, msg.Answer...)
	rrs = append(rrs, msg.Ns...)
	rrs = append(rrs, msg.Extra...)
	if len(rrs) > maxRecordsPerMsg {
		rrs = rrs[:maxRecordsPerMsg]
	}
	insts := map[string]*instanceRecords{}
	get := func(orig string) *instanceRecords {
		name := strings.ToLower(orig)
		r := insts[name]
		if r == nil && len(insts) < maxInstancesPerMsg {
			r = &instanceRecords{orig: orig, ptrTTL: -1}
			insts[name] = r
		}
		return r
	}
	hosts := map[string][]netip.Addr{}
	for _, rr := range rrs {
		h := rr.Header()
		name := strings.ToLower(h.Name)
		switch rr := rr.(type) {
		case *dns.PTR:
			if name != serviceFQDN {
				continue
			}
			if !strings.HasSuffix(strings.ToLower(rr.Ptr), "."+serviceFQDN) {
				continue
			}
			if r := get(rr.Ptr); r != nil {
				r.ptrTTL = int64(h.Ttl)
				r.goodbye = r.goodbye || h.Ttl == 0
			}
		case *dns.SRV:
			if !strings.HasSuffix(name, "."+serviceFQDN) {
				continue
			}
			if r := get(h.Name); r != nil {
				r.srv = rr
				r.goodbye = r.goodbye || h.Ttl == 0
			}
		case *dns.TXT:
			if !strings.HasSuffix(name, "."+serviceFQDN) {
				continue
			}
			if r := get(h.Name); r != nil {
				r.txt = rr
			}
		case *dns.A:
			if ip, ok := netip.AddrFromSlice(rr.A); ok && len(hosts[name]) < maxAddrs && h.Ttl > 0 {
				hosts[name] = append(hosts[name], ip.Unmap())
			}
		case *dns.AAAA:
			if ip, ok := netip.AddrFromSlice(rr.AAAA); ok && len(hosts[name]) < maxAddrs && h.Ttl > 0 {
				hosts[name] = append(hosts[name], ip)
			}
		}
	}
	if len(insts) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Messages++
	zone := d.ifNames[ifIndex]
	now := d.opts.Now()
	var follow *dns.Msg
	for name, r := range insts {
		label := ""
		if n := len(r.orig) - len(serviceFQDN) - 1; n > 0 {
			label = unescapeLabel(r.orig[:n])
		}
		var info txtInfo
		var txtErr error
		if r.txt != nil {
			info, txtErr = parseTXT(rawTXT(r.txt.Txt))
			if txtErr != nil {
				d.stats.BadTXT++
			}
		}
		if r.goodbye {
			id := ""
			if r.txt != nil && txtErr == nil {
				id = info.ID
			}
			d.goodbye(id, label, from)
			continue
		}
		var addrs []netip.Addr
		if r.srv != nil {
			for _, a := range hosts[strings.ToLower(r.srv.Target)] {
				if a.Is6() && a.IsLinkLocalUnicast() && zone != "" {
					a = a.WithZone(zone)
				}
				addrs = append(addrs, a)
			}
			// Only what a sender can dial: an instance whose addresses
			// are none of those is asked again for them, not listed.
			addrs = d.sortAddrs(addrs)
		}
		if r.srv == nil || r.txt == nil || len(addrs) == 0 {
			follow = d.followUp(follow, name, r, now)
			continue
		}
		if txtErr != nil || info.ID == d.opts.SelfID {
			continue
		}
		ttl := time.Duration(min(r.srv.Hdr.Ttl, r.txt.Hdr.Ttl)) * time.Second
		if r.ptrTTL > 0 {
			ttl = min(ttl, time.Duration(r.ptrTTL)*time.Second)
		}
		ttl = min(ttl, d.opts.PeerTTL)
		p := Peer{
			Name:    info.Name,
			ID:      info.ID,
			Addrs:   addrs,
			Ports:   info.Ports, // never empty: parseTXT refuses a record without a port
			OS:      info.OS,
			Version: info.Version,
			Source:  SourceMDNS,
		}
		if p.Name == "" {
			p.Name, _ = cleanName(label)
		}
		d.observe(p, ttl)
	}
	return follow
}

// followUp adds questions asking for what an incomplete instance lacks,
// at most once a second per instance. Called with d.mu held.
func (d *Discovery) followUp(m *dns.Msg, name string, r *instanceRecords, now time.Time) *dns.Msg {
	if t, ok := d.asked[name]; ok && now.Sub(t) < time.Second {
		return m
	}
	if len(d.asked) >= maxAsked {
		return m
	}
	d.asked[name] = now
	if m == nil {
		m = new(dns.Msg)
		m.RecursionDesired = false
	}
	if len(m.Question) >= 8 {
		return m
	}
	if r.srv == nil || r.txt == nil {
		m.Question = append(m.Question,
			dns.Question{Name: name, Qtype: dns.TypeSRV, Qclass: dns.ClassINET},
			dns.Question{Name: name, Qtype: dns.TypeTXT, Qclass: dns.ClassINET})
	}
	if r.srv != nil {
		t := canonicalName(r.srv.Target)
		if _, ok := dns.IsDomainName(t); ok {
			m.Question = append(m.Question,
				dns.Question{Name: t, Qtype: dns.TypeA, Qclass: dns.ClassINET},
				dns.Question{Name: t, Qtype: dns.TypeAAAA, Qclass: dns.ClassINET})
		}
	}
	return m
}

// rawTXT undoes miekg/dns's escaping of TXT strings (\DDD for bytes
// outside printable ASCII, \" and \\). Only as many strings as parseTXT
// accepts are converted; one more makes it reject the record.
func rawTXT(txt []string) []string {
	if len(txt) > maxTXTStrings+1 {
		txt = txt[:maxTXTStrings+1]
	}
	out := make([]string, len(txt))
	for i, s := range txt {
		out[i] = unescapeLabel(s)
	}
	return out
}

// unescapeLabel undoes miekg/dns's presentation escapes (\. \032 \\).
func unescapeLabel(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b = append(b, c)
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			v := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0')
			if v < 256 {
				b = append(b, byte(v))
				i += 3
				continue
			}
		}
		b = append(b, s[i+1])
		i++
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
