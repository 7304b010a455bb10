package discovery

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/peer"
)

// LocalSend devices share the peer table with Ferry devices. A LocalSend
// device is fed in with SeeLocalSend (wire it to localsend.Discoverer's
// OnDevice: announcements, register answers and the /24 scan all end
// there) and shows as a Peer whose LocalSend field is set:
//
//   - a device that speaks only LocalSend has the ID of the localsend
//     kind, "localsend:<FINGERPRINT>" (peer.ID's text), its alias as Name,
//     the address it was heard from in Addrs, Source SourceLocalSend, and
//     its LocalSend server in Addresses (addr.LocalSend, pinned to the
//     fingerprint). A device in LocalSend's HTTP mode proves no
//     fingerprint: its ID is "anon:<host:port>";
//   - a device that speaks both is ONE peer: its Ferry entry (ID, Name,
//     Addrs, Ports from mDNS or a probe) with LocalSend set, and Addresses
//     lists its Ferry addresses then its LocalSend one. It is recognised
//     by its key, never by what it claims: Ferry presents its identity
//     certificate over LocalSend too, so the certificate that proved the
//     LocalSend fingerprint over TLS (localsend.Device.KeyHash) hashes to
//     the Ferry device ID (see docs/architecture.md, "Peers").
//
// A LocalSend device stays Options.LocalSendTTL after it was last heard
// of (its announcements, or its register answers to ours), within the
// table's MaxPeers bound. The LocalSend side of a Ferry device whose mDNS
// ran out stays on its own; one whose Ferry device said goodbye goes
// with it, unless it proved itself after the goodbye.

// SourceLocalSend marks a peer heard of only through LocalSend's
// discovery (multicast announcements, registers, the /24 scan).
const SourceLocalSend Source = "localsend"

// LocalSend is what a device that speaks LocalSend says about itself.
// Alias, DeviceModel and DeviceType are hints from the device; Verified
// says the fingerprint was proven over TLS.
type LocalSend struct {
	// Alias is the device's LocalSend name.
	Alias string `json:"alias"`
	// DeviceModel ("Samsung", "Linux", ...) and DeviceType (mobile,
	// desktop, web, headless, server; "" when not said) describe it.
	DeviceModel string `json:"device_model,omitempty"`
	DeviceType  string `json:"device_type,omitempty"`
	// Fingerprint is the upper-case hex SHA-256 of its certificate's DER
	// (HTTPS), or the random string it announced (HTTP).
	Fingerprint string `json:"fingerprint"`
	// Addr is its LocalSend server: localsend+https://host:port#FINGERPRINT.
	Addr addr.Addr `json:"addr"`
	// Verified says the device proved Fingerprint over TLS (it answered a
	// register pinned to it, or registered with its certificate); a
	// multicast announcement alone is a claim.
	Verified bool `json:"verified"`
	// LastSeen is when it was last heard of.
	LastSeen time.Time `json:"last_seen"`
}

// lsSide is a Ferry entry's LocalSend side, with its own expiry.
type lsSide struct {
	info    LocalSend
	expires time.Time
	proven  time.Time // when it last proved its key (a claim only refreshes info.LastSeen)
}

// Kind is the kind of the peer's identity: peer.Ferry for a device that
// speaks Ferry (whether or not it also speaks LocalSend), peer.LocalSend
// for a device that speaks only LocalSend, peer.Anon for one in
// LocalSend's HTTP mode; "" for an ID that does not parse.
func (p Peer) Kind() peer.Kind {
	id, err := peer.Parse(p.ID)
	if err != nil {
		return ""
	}
	return id.Kind
}

// SpeaksFerry reports whether the device speaks Ferry's own protocol.
func (p Peer) SpeaksFerry() bool { return p.Kind() == peer.Ferry }

// SpeaksLocalSend reports whether the device speaks LocalSend.
func (p Peer) SpeaksLocalSend() bool { return p.LocalSend != nil }

// SeeLocalSend records a LocalSend device heard of (safe from any
// goroutine; it does not block). A device whose proven key is a Ferry
// device of the table (or this one) joins that entry; any other is an
// entry of its own.
func (d *Discovery) SeeLocalSend(dev localsend.Device) {
	ip := dev.Addr.Unmap()
	// An announcement from 0.0.0.0 (a device with no IPv4 address sends
	// LocalSend's IPv4 multicast from it: an IPv6-only link) cannot be
	// answered there, and listed it would be a second device of the name.
	if !ip.IsValid() || ip.IsUnspecified() || dev.Fingerprint == "" {
		return
	}
	if dev.DeviceModel == localsend.ModelNotReceiving {
		return // a Ferry that only looks for devices: nothing can be sent there
	}
	port := dev.Port
	if port <= 0 || port > 65535 {
		port = localsend.DefaultPort
	}
	hostport := netip.AddrPortFrom(ip, uint16(port)).String()
	if ip.Zone() != "" {
		hostport = net.JoinHostPort(ip.String(), strconv.Itoa(port))
	}
	scheme := dev.Scheme()
	fp := dev.Fingerprint
	if scheme == "https" {
		fp = strings.ToUpper(fp)
	}
	info := LocalSend{Alias: dev.Alias, DeviceModel: dev.DeviceModel, DeviceType: dev.DeviceType, Fingerprint: fp,
		Addr: addr.NewLocalSend(scheme, hostport, fp), Verified: dev.Verified && scheme == "https"}
	id := peer.Anonymous(hostport).String()
	if scheme == "https" {
		lid, err := peer.Fingerprint(fp)
		if err != nil {
			d.logf("discovery: LocalSend device at %s announced a bad fingerprint", hostport)
			return
		}
		id = lid.String()
	}
	var ferryID string
	if info.Verified && dev.KeyHash != ([32]byte{}) {
		ferryID = peer.FromFerry(dev.KeyHash).String()
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if ferryID != "" && ferryID == d.opts.SelfID {
		return // this device, heard over LocalSend
	}
	now := d.opts.Now()
	info.LastSeen = now
	exp := now.Add(d.opts.LocalSendTTL)
	if e, ok := d.peers[ferryID]; ok && ferryID != "" && e.peer.Source != SourceLocalSend {
		d.removeLocked(id, "merged")
		d.setSide(e, info, exp)
		return
	}
	if e := d.sideOf(info.Fingerprint); e != nil {
		// A device already known as the LocalSend side of a Ferry device.
		if info.Verified {
			d.setSide(e, info, exp)
		} else {
			e.ls.info.LastSeen = now // a claim keeps it fresh, it moves nothing
			e.peer.LocalSend.LastSeen = now
		}
		return
	}
	e, ok := d.peers[id]
	if !ok {
		for len(d.peers) >= d.opts.MaxPeers {
			d.evictOldest()
		}
		e = &entry{}
		d.peers[id] = e
	} else if old := e.peer.LocalSend; old != nil && old.Verified && !info.Verified && now.Before(e.expires) {
		// A claim does not move a device that proved itself (anyone may
		// announce any fingerprint): it only keeps it fresh.
		e.peer.LastSeen = now
		return
	}
	e.ferryID = ferryID
	e.expires = exp
	p := Peer{ID: id, Name: info.Alias, Addrs: d.sortAddrs([]netip.Addr{ip}), Source: SourceLocalSend, LastSeen: now, LocalSend: &info}
	old := e.peer
	e.peer = p
	switch {
	case !ok:
		d.publish(Event{Kind: PeerAppeared, Peer: p})
	case !samePeer(old, p):
		d.publish(Event{Kind: PeerChanged, Peer: p})
	}
}

// sideOf is the Ferry entry whose LocalSend side has fingerprint fp.
// Called with d.mu held.
func (d *Discovery) sideOf(fp string) *entry {
	for _, e := range d.peers {
		if e.ls != nil && e.ls.info.Fingerprint == fp {
			return e
		}
	}
	return nil
}

// setSide sets a Ferry entry's LocalSend side. Called with d.mu held.
func (d *Discovery) setSide(e *entry, info LocalSend, exp time.Time) {
	old := e.peer
	e.ls = &lsSide{info: info, expires: exp, proven: info.LastSeen}
	p := e.peer
	p.LocalSend = &info
	e.peer = p
	if !samePeer(old, p) {
		d.publish(Event{Kind: PeerChanged, Peer: p})
	}
}

// adoptLocalSend moves into the new Ferry entry e (not yet published) the
// LocalSend entry whose proven key is its ID. Called with d.mu held.
func (d *Discovery) adoptLocalSend(e *entry) {
	for id, o := range d.peers {
		if o.ferryID == "" || o.ferryID != e.peer.ID || o.peer.LocalSend == nil {
			continue
		}
		e.ls = &lsSide{info: *o.peer.LocalSend, expires: o.expires}
		info := *o.peer.LocalSend
		e.peer.LocalSend = &info
		d.removeLocked(id, "merged")
		return
	}
}

// expireSide drops the LocalSend sides that ran out, and turns a Ferry
// entry that ran out while its LocalSend side did not into a LocalSend
// entry (true: id is gone). A Ferry entry that said goodbye takes its
// side with it: the side is the same process (its key proved it), which
// is quitting (Ferry ends LocalSend before it says goodbye), and left on
// its own it would be offered Send for up to LocalSendTTL; unless the side
// proved itself again after the goodbye, which a quitting device cannot
// (a claim, which anyone can make, does not count). Called with d.mu held,
// from expire.
func (d *Discovery) expireSide(id string, e *entry, now time.Time) (removed bool) {
	if e.ls == nil {
		return false
	}
	if !now.Before(e.ls.expires) {
		e.ls = nil
		p := e.peer
		p.LocalSend = nil
		e.peer = p
		d.publish(Event{Kind: PeerChanged, Peer: p, Reason: "LocalSend expired"})
		return false
	}
	if now.Before(e.expires) || e.leaving && !e.ls.proven.After(e.left) {
		return false // expire removes a leaving entry, side and all
	}
	// The Ferry side was not heard for its TTL (mDNS missed, the device
	// may still be there), or the LocalSend side answered after the
	// goodbye: the LocalSend side stays on its own.
	side := *e.ls
	reason := "expired"
	if e.leaving {
		reason = "goodbye"
	}
	d.removeLocked(id, reason)
	lid, err := peer.Fingerprint(side.info.Fingerprint)
	if err != nil {
		return true
	}
	ip, perr := netip.ParseAddr(side.info.Addr.Host())
	var addrs []netip.Addr
	if perr == nil {
		addrs = d.sortAddrs([]netip.Addr{ip})
	}
	info := side.info
	p := Peer{ID: lid.String(), Name: info.Alias, Addrs: addrs, Source: SourceLocalSend, LastSeen: info.LastSeen, LocalSend: &info}
	d.peers[p.ID] = &entry{peer: p, expires: side.expires, ferryID: id}
	d.publish(Event{Kind: PeerAppeared, Peer: p})
	return true
}

// sameLocalSend compares two LocalSend sides but for when they were seen.
func sameLocalSend(a, b *LocalSend) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.LastSeen, y.LastSeen = time.Time{}, time.Time{}
	return x == y
}
