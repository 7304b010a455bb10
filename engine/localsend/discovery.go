package localsend

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Device is a LocalSend device heard of: its info and where it was seen.
type Device struct {
	Info
	// Addr is the device's address (its server listens on Info.Port).
	Addr netip.Addr
	// Verified says the device proved its fingerprint over TLS: it
	// answered our register pinned to it, or registered with a client
	// certificate that has it. A multicast announcement alone is a claim.
	Verified bool
	// KeyHash is the SHA-256 of the public key (SubjectPublicKeyInfo) of
	// the certificate that proved the fingerprint, when Verified over TLS;
	// zero otherwise. A device whose certificate carries a key known from
	// another protocol (a Ferry device ID is that same hash) is that
	// device: discovery shows it once.
	KeyHash [32]byte
	// Via says how it was heard of: "multicast", "register" or "scan".
	Via string
	// Seen is when.
	Seen time.Time
}

// AddrPort is where the device's server listens.
func (d Device) AddrPort() string {
	return net.JoinHostPort(d.Addr.String(), strconv.Itoa(d.Port))
}

// Target is how to send to the device: its address, scheme and the
// fingerprint its certificate must have.
func (d Device) Target() Target {
	return Target{Addr: d.AddrPort(), Fingerprint: d.Fingerprint, Scheme: d.Scheme()}
}

// DiscoveryConfig configures a Discoverer. Zero values are the defaults given.
type DiscoveryConfig struct {
	// Info is announced: alias, model, type, fingerprint, port and
	// protocol of this device's server.
	Info Info
	// Client answers announcements with a register (nil: answers go over
	// UDP only).
	Client *Client
	// Port is the UDP port (0: DefaultPort); GroupV4 and GroupV6 the
	// groups (empty: MulticastIPv4, MulticastIPv6). NoIPv6 skips IPv6.
	Port             int
	GroupV4, GroupV6 string
	NoIPv6           bool
	// Interfaces lists the interfaces to join and announce on (nil: every
	// interface that is up and multicast-capable). It is called by
	// NewDiscoverer only.
	Interfaces func() ([]net.Interface, error)
	// Download, when set, says whether this device serves the download API
	// now (a share is open: Server.Info().Download); announcements then
	// carry download: true.
	Download func() bool
	// OnDevice hears every device seen or seen again; it must not block.
	OnDevice func(Device)
	// AnnounceEvery announces again at this interval after the first
	// three (0: never, as the official app, which announces on demand).
	// Each announcement is answered by every device, so a table that
	// expires devices (discovery.Options.LocalSendTTL) needs it: 30 s
	// against its 90 s.
	AnnounceEvery time.Duration
	// MaxAnswers bounds the register answers in flight (0: 8); an
	// announcement that finds them all busy is answered over UDP.
	MaxAnswers int
	// Log takes debug lines; nil discards them.
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Discoverer announces this device on LocalSend's multicast groups and
// hears the other devices: their announcements (answered with a register,
// or over UDP when that fails), their UDP answers, and the registers that
// answer our own announcements (fed in through HandleRegister).
type Discoverer struct {
	cfg    DiscoveryConfig
	ifaces []net.Interface
	v4     *ipv4.PacketConn
	v6     *ipv6.PacketConn
	g4, g6 *net.UDPAddr
	sem    chan struct{}
	wg     sync.WaitGroup
	// sendMu makes each interface choice and its write one step.
	sendMu sync.Mutex

	mu       sync.Mutex // guards the fields below
	answered map[string]time.Time
	closed   bool
	// joined lists, per family, the interfaces whose group join worked.
	joined4, joined6 []string
}

// maxAnswered bounds the announcers remembered (to answer each at most
// once per answerEvery).
const (
	maxAnswered = 1024
	answerEvery = 2 * time.Second
)

// NewDiscoverer opens the multicast sockets. Interfaces whose join fails
// are skipped (JoinedInterfaces says which worked); it fails only when no
// IPv4 socket can be had.
func NewDiscoverer(cfg DiscoveryConfig) (*Discoverer, error) {
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.GroupV4 == "" {
		cfg.GroupV4 = MulticastIPv4
	}
	if cfg.GroupV6 == "" {
		cfg.GroupV6 = MulticastIPv6
	}
	if cfg.MaxAnswers <= 0 {
		cfg.MaxAnswers = 8
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interfaces == nil {
		cfg.Interfaces = MulticastInterfaces
	}
	ifs, err := cfg.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("localsend discovery: interfaces: %w", err)
	}
	d := &Discoverer{cfg: cfg, ifaces: ifs, sem: make(chan struct{}, cfg.MaxAnswers), answered: map[string]time.Time{}}
	d.g4 = &net.UDPAddr{IP: net.ParseIP(cfg.GroupV4), Port: cfg.Port}
	lc := net.ListenConfig{Control: reuse}
	pc, err := lc.ListenPacket(context.Background(), "udp4", net.JoinHostPort("0.0.0.0", strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("localsend discovery: %w", err)
	}
	d.v4 = ipv4.NewPacketConn(pc)
	_ = d.v4.SetMulticastTTL(1)
	_ = d.v4.SetMulticastLoopback(true)
	for i := range ifs {
		if err := d.v4.JoinGroup(&ifs[i], d.g4); err == nil {
			d.joined4 = append(d.joined4, ifs[i].Name)
		}
	}
	if !cfg.NoIPv6 {
		d.g6 = &net.UDPAddr{IP: net.ParseIP(cfg.GroupV6), Port: cfg.Port}
		if pc6, err := lc.ListenPacket(context.Background(), "udp6", net.JoinHostPort("::", strconv.Itoa(cfg.Port))); err == nil {
			d.v6 = ipv6.NewPacketConn(pc6)
			_ = d.v6.SetMulticastHopLimit(1)
			_ = d.v6.SetMulticastLoopback(true)
			for i := range ifs {
				if err := d.v6.JoinGroup(&ifs[i], d.g6); err == nil {
					d.joined6 = append(d.joined6, ifs[i].Name)
				}
			}
			if len(d.joined6) == 0 {
				d.v6.Close()
				d.v6 = nil
			}
		}
	}
	return d, nil
}

// MulticastInterfaces lists the interfaces that are up and multicast-capable:
// those a Discoverer joins and announces on by default.
func MulticastInterfaces() ([]net.Interface, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []net.Interface
	for _, i := range all {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagMulticast != 0 {
			out = append(out, i)
		}
	}
	return out, nil
}

// JoinedInterfaces names the interfaces whose IPv4 and IPv6 group joins
// worked (ferry-cli doctor reports them).
func (d *Discoverer) JoinedInterfaces() (v4, v6 []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.joined4...), append([]string(nil), d.joined6...)
}

// Run reads announcements and answers until ctx ends or Close; it
// announces this device 100 ms, 500 ms and 2 s after it starts, as the
// official app does, then every AnnounceEvery. It returns nil when ctx
// ends.
func (d *Discoverer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, d.closeSockets)
	defer stop()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for _, after := range []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond} {
			t := time.NewTimer(after)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if err := d.Announce(); err != nil {
				d.cfg.Log.Debug("localsend announce", "err", err)
			}
		}
		if d.cfg.AnnounceEvery <= 0 {
			return
		}
		tick := time.NewTicker(d.cfg.AnnounceEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := d.Announce(); err != nil {
				d.cfg.Log.Debug("localsend announce", "err", err)
			}
		}
	}()
	errs := make(chan error, 2)
	readers := 1
	go func() { errs <- d.read4(ctx) }()
	if d.v6 != nil {
		readers++
		go func() { errs <- d.read6(ctx) }()
	}
	var first error
	for range readers {
		if err := <-errs; err != nil && first == nil && ctx.Err() == nil {
			first = err
		}
		cancel()
	}
	d.wg.Wait()
	return first
}

func (d *Discoverer) closeSockets() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.v4.Close()
	if d.v6 != nil {
		d.v6.Close()
	}
}

// Close closes the sockets; a running Run returns.
func (d *Discoverer) Close() error {
	d.closeSockets()
	d.wg.Wait()
	return nil
}

func (d *Discoverer) read4(ctx context.Context) error {
	buf := make([]byte, MaxSmallBytes)
	for {
		n, _, src, err := d.v4.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("localsend discovery: %w", err)
		}
		if ua, ok := src.(*net.UDPAddr); ok {
			d.handle(ctx, buf[:n], ua.AddrPort().Addr().Unmap())
		}
	}
}

func (d *Discoverer) read6(ctx context.Context) error {
	buf := make([]byte, MaxSmallBytes)
	for {
		n, _, src, err := d.v6.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("localsend discovery: %w", err)
		}
		if ua, ok := src.(*net.UDPAddr); ok {
			d.handle(ctx, buf[:n], ua.AddrPort().Addr())
		}
	}
}

// ParseAnnouncement reads one multicast datagram: an announcement or a UDP
// answer, validated and bounded.
func ParseAnnouncement(b []byte) (Info, error) { return parseInfo(b, true) }

// handle takes one datagram from src.
func (d *Discoverer) handle(ctx context.Context, b []byte, src netip.Addr) {
	in, err := ParseAnnouncement(b)
	if err != nil {
		d.cfg.Log.Debug("localsend discovery: bad datagram", "from", src, "err", err)
		return
	}
	if SameFingerprint(in.Fingerprint, d.cfg.Info.Fingerprint) {
		return // our own announcement, looped back
	}
	announce := in.Announce != nil && *in.Announce
	in.Announce = nil
	d.seen(Device{Info: in, Addr: src, Via: "multicast"})
	if !announce || !d.shouldAnswer(in.Fingerprint, src) {
		return
	}
	dev := Device{Info: in, Addr: src}
	select {
	case d.sem <- struct{}{}:
	default:
		d.answerUDP()
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { <-d.sem }()
		if d.cfg.Client == nil {
			d.answerUDP()
			return
		}
		// Pinned to the announced fingerprint: an announcer that claims
		// someone else's fingerprint fails here.
		got, cert, err := d.cfg.Client.register(ctx, dev.Target())
		if err != nil {
			d.cfg.Log.Debug("localsend register answer failed; answering over UDP", "to", dev.AddrPort(), "err", err)
			d.answerUDP()
			return
		}
		got.Port, got.Protocol = in.Port, in.Protocol
		d.seen(Device{Info: got, Addr: src, Verified: cert != nil, KeyHash: KeyHash(cert), Via: "register"})
	}()
}

// shouldAnswer says whether an announcement from fp at src is answered now
// (each at most once per answerEvery, so a flood is not amplified).
func (d *Discoverer) shouldAnswer(fp string, src netip.Addr) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	now := d.cfg.Now()
	k := fp + "|" + src.String()
	if t, ok := d.answered[k]; ok && now.Sub(t) < answerEvery {
		return false
	}
	if len(d.answered) >= maxAnswered {
		clear(d.answered)
	}
	d.answered[k] = now
	return true
}

func (d *Discoverer) seen(dev Device) {
	dev.Seen = d.cfg.Now()
	if d.cfg.OnDevice != nil {
		d.cfg.OnDevice(dev)
	}
}

// HandleRegister takes a register request the server received (wire it to
// ServerConfig.OnRegister): a device answering our announcement, or
// scanning. It is verified by its client certificate (nil: none).
func (d *Discoverer) HandleRegister(in Info, addr netip.Addr, cert *x509.Certificate) {
	if SameFingerprint(in.Fingerprint, d.cfg.Info.Fingerprint) {
		return
	}
	dev := Device{Info: in, Addr: addr, Via: "register"}
	if cert != nil {
		// The certificate is the identity; a claim that contradicts it
		// is dropped.
		dev.Fingerprint, dev.Verified, dev.KeyHash = Fingerprint(cert.Raw), true, KeyHash(cert)
	}
	d.seen(dev)
}

// KeyHash is the SHA-256 of cert's public key (its SubjectPublicKeyInfo);
// zero for nil.
func KeyHash(cert *x509.Certificate) [32]byte {
	if cert == nil {
		return [32]byte{}
	}
	return sha256.Sum256(cert.RawSubjectPublicKeyInfo)
}

// announcement is this device's multicast message.
func (d *Discoverer) announcement(announce bool) []byte {
	in := d.cfg.Info
	in.Version = ProtocolVersion
	in.Announce = &announce
	if d.cfg.Download != nil {
		in.Download = d.cfg.Download()
	}
	b, _ := json.Marshal(in)
	return b
}

// Announce sends this device's announcement on every joined interface.
func (d *Discoverer) Announce() error { return d.send(d.announcement(true)) }

// answerUDP is the UDP answer (announce:false) for devices that run no
// server, or that our register did not reach.
func (d *Discoverer) answerUDP() {
	if err := d.send(d.announcement(false)); err != nil {
		d.cfg.Log.Debug("localsend UDP answer", "err", err)
	}
}

func (d *Discoverer) send(b []byte) error {
	d.sendMu.Lock()
	defer d.sendMu.Unlock()
	var sent int
	var last error
	for i := range d.ifaces {
		ifi := &d.ifaces[i]
		if err := d.v4.SetMulticastInterface(ifi); err == nil {
			if _, err := d.v4.WriteTo(b, nil, d.g4); err == nil {
				sent++
			} else {
				last = err
			}
		}
		if d.v6 != nil {
			if err := d.v6.SetMulticastInterface(ifi); err == nil {
				if _, err := d.v6.WriteTo(b, nil, d.g6); err == nil {
					sent++
				}
			}
		}
	}
	if sent == 0 {
		if last == nil {
			last = errors.New("no multicast interface")
		}
		return fmt.Errorf("localsend announce: %w", last)
	}
	return nil
}
