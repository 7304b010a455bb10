//go:build linux

package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

const netnsDir = "/var/run/netns"

// Available reports whether a lab can be built here, and if not, why.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (network namespaces and TUN devices)", ErrUnsupported)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("%w: no /dev/net/tun: %v", ErrUnsupported, err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no `ip` command (iproute2): %v", ErrUnsupported, err)
	}
	return nil
}

// Lab is a running network lab. Its methods are safe for concurrent use.
type Lab struct {
	spaces
	cfg   Config
	seed  uint64
	paths []*path

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	cerr   error
}

// spaces is a lab's namespaces by role and what runs inside them; both
// labs (Lab, NAT) embed it.
type spaces struct {
	names  map[string]string // role -> namespace name
	closed atomic.Bool
}

type path struct {
	cfg  PathConfig
	idx  int
	devs [2]*tunDevice // [Sender], [Receiver]
	fwd  *link         // sender -> receiver
	rev  *link         // receiver -> sender
}

var labSeq atomic.Uint64

// New builds a lab: namespaces, TUN devices, addresses, routes and the
// forwarders. ctx bounds the setup only; the lab lives until Close, which the
// caller must call (also on failure paths; it is idempotent). On error
// everything already created is removed.
func New(ctx context.Context, cfg Config) (*Lab, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	if cc := cfg.CongestionControl; cc != "" && !ccListed("allowed", cc) {
		allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
		return nil, fmt.Errorf("%w: %q is not in net.ipv4.tcp_allowed_congestion_control (%s); allow it with: sysctl -w net.ipv4.tcp_allowed_congestion_control=\"%s %s\"",
			ErrCongestionControlNotAllowed, cc, strings.TrimSpace(string(allowed)), strings.TrimSpace(string(allowed)), cc)
	}
	if cc := cfg.RouteCongestionControl; cc != "" && !ccListed("available", cc) {
		avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
		return nil, fmt.Errorf("%w: %q is not in net.ipv4.tcp_available_congestion_control (%s); load it with: modprobe tcp_%s",
			ErrCongestionControlNotAllowed, cc, strings.TrimSpace(string(avail)), cc)
	}
	sweepStale(ctx, cfg.NamePrefix)
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	id := fmt.Sprintf("%s-%d-%d", cfg.NamePrefix, os.Getpid(), labSeq.Add(1))
	l := &Lab{
		cfg:  cfg,
		seed: seed,
		spaces: spaces{names: map[string]string{
			Sender:   id + "-snd",
			Receiver: id + "-rcv",
		}},
	}
	if err := l.setup(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("netlab: setup: %w", err)
	}
	return l, nil
}

func (l *Lab) setup(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for _, role := range []string{Sender, Receiver} {
		ns := l.names[role]
		if err := addNamespace(ctx, ns, func(f func() error) error { return l.Do(role, f) }); err != nil {
			return err
		}
		if cc := l.cfg.CongestionControl; cc != "" {
			err := l.Do(role, func() error {
				return os.WriteFile("/proc/sys/net/ipv4/tcp_congestion_control", []byte(cc), 0)
			})
			if err != nil {
				return fmt.Errorf("congestion control %q in %s: %w", cc, ns, err)
			}
		}
	}
	for i, pc := range l.cfg.Paths {
		p := &path{cfg: pc, idx: i}
		l.paths = append(l.paths, p)
		ifname := tunName(i, pc.Name)
		for r, role := range []string{Sender, Receiver} {
			var dev *tunDevice
			if err := l.Do(role, func() error {
				var err error
				dev, err = openTUN(ifname)
				return err
			}); err != nil {
				return fmt.Errorf("tun %s in %s: %w", ifname, role, err)
			}
			p.devs[r] = dev
			ns := l.names[role]
			local, peer := pathAddr(role, i), pathAddr(Receiver, i)
			if role == Receiver {
				peer = pathAddr(Sender, i)
			}
			if err := ipCmd(ctx, "-n", ns, "addr", "add", local.String(), "peer", peer.String()+"/32", "dev", ifname); err != nil {
				return err
			}
			if err := ipCmd(ctx, "-n", ns, "link", "set", ifname, "mtu", strconv.Itoa(pc.MTU), "txqueuelen", "1000", "up"); err != nil {
				return err
			}
			if cc := l.congctl(); cc != nil {
				args := append([]string{"-n", ns, "route", "replace", peer.String() + "/32", "dev", ifname, "proto", "kernel", "scope", "link", "src", local.String()}, cc...)
				if err := ipCmd(ctx, args...); err != nil {
					return err
				}
			}
		}
		// Sender: a socket bound to this path's address leaves through it.
		ns, table := l.names[Sender], strconv.Itoa(100+i)
		if err := ipCmd(ctx, "-n", ns, "rule", "add", "from", pathAddr(Sender, i).String(), "table", table, "priority", strconv.Itoa(1000+i)); err != nil {
			return err
		}
		if err := ipCmd(ctx, append([]string{"-n", ns, "route", "add", "default", "dev", ifname, "table", table}, l.congctl()...)...); err != nil {
			return err
		}
		bufSize := pc.MTU + 64
		p.fwd = newLink(p.devs[0], p.devs[1], bufSize, l.seed+uint64(2*i))
		p.rev = newLink(p.devs[1], p.devs[0], bufSize, l.seed+uint64(2*i+1))
		for _, ln := range []*link{p.fwd, p.rev} {
			l.wg.Add(2)
			go func() { defer l.wg.Done(); _ = ln.readLoop() }()
			go func() { defer l.wg.Done(); _ = ln.writeLoop(runCtx) }()
		}
	}
	return nil
}

// congctl is the route attribute that imposes
// Config.RouteCongestionControl.
func (l *Lab) congctl() []string {
	if cc := l.cfg.RouteCongestionControl; cc != "" {
		return []string{"congctl", cc}
	}
	return nil
}

// ccListed reports whether cc is in net.ipv4.tcp_<list>_congestion_control
// ("reno" always is).
func ccListed(list, cc string) bool {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_" + list + "_congestion_control")
	return cc == "reno" || err == nil && slices.Contains(strings.Fields(string(b)), cc)
}

func tunName(i int, name string) string {
	n := fmt.Sprintf("t%d-%s", i, name)
	if len(n) > 15 {
		n = n[:15]
	}
	return n
}

// Seed is the seed the impairment randomness was started from.
func (l *Lab) Seed() uint64 { return l.seed }

// Namespace is the real name of role's namespace, for `ip netns exec` or
// `ip -n` callers.
func (l *spaces) Namespace(ns string) (string, error) {
	n, ok := l.names[ns]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
	}
	return n, nil
}

// Paths lists the path names in Config order.
func (l *Lab) Paths() []string {
	out := make([]string, len(l.paths))
	for i, p := range l.paths {
		out[i] = p.cfg.Name
	}
	return out
}

// Addr is the address of namespace ns on the named path.
func (l *Lab) Addr(ns, pathName string) (netip.Addr, error) {
	if _, ok := l.names[ns]; !ok {
		return netip.Addr{}, fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
	}
	p, err := l.path(pathName)
	if err != nil {
		return netip.Addr{}, err
	}
	return pathAddr(ns, p.idx), nil
}

// MustAddr is Addr for tests and tools that pass known names; it panics on
// an unknown name.
func (l *Lab) MustAddr(ns, pathName string) netip.Addr {
	a, err := l.Addr(ns, pathName)
	if err != nil {
		panic(err)
	}
	return a
}

func (l *Lab) path(name string) (*path, error) {
	for _, p := range l.paths {
		if p.cfg.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownPath, name)
}

// SetImpairment replaces the impairment of one or both directions of a path.
// It takes effect for the next packet; packets already in the delay line keep
// their schedule.
func (l *Lab) SetImpairment(pathName string, dir Dir, im Impairment) error {
	if err := im.Validate(); err != nil {
		return err
	}
	p, err := l.path(pathName)
	if err != nil {
		return err
	}
	switch dir {
	case SenderToReceiver:
		p.fwd.setImpairment(im)
	case ReceiverToSender:
		p.rev.setImpairment(im)
	case Both:
		p.fwd.setImpairment(im)
		p.rev.setImpairment(im)
	default:
		return fmt.Errorf("netlab: set impairment: bad direction %v", dir)
	}
	return nil
}

// Impairment returns the current impairment of one direction of a path.
func (l *Lab) Impairment(pathName string, dir Dir) (Impairment, error) {
	p, err := l.path(pathName)
	if err != nil {
		return Impairment{}, err
	}
	switch dir {
	case SenderToReceiver:
		return p.fwd.impairment(), nil
	case ReceiverToSender:
		return p.rev.impairment(), nil
	}
	return Impairment{}, fmt.Errorf("netlab: impairment: bad direction %v", dir)
}

// Cut makes a path drop everything in both directions, including packets in
// flight, as if the link went away. The interfaces stay up, as with a Wi-Fi
// link whose radio lost the access point.
func (l *Lab) Cut(pathName string) error { return l.setCut(pathName, true) }

// Restore undoes Cut.
func (l *Lab) Restore(pathName string) error { return l.setCut(pathName, false) }

func (l *Lab) setCut(name string, cut bool) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	p.fwd.setCut(cut)
	p.rev.setCut(cut)
	return nil
}

// Stats returns the counters of every path, in Config order.
func (l *Lab) Stats() []PathStats {
	out := make([]PathStats, len(l.paths))
	for i, p := range l.paths {
		p.fwd.mu.Lock()
		cut := p.fwd.cut
		p.fwd.mu.Unlock()
		out[i] = PathStats{
			Name:             p.cfg.Name,
			Cut:              cut,
			SenderToReceiver: p.fwd.snapshot(),
			ReceiverToSender: p.rev.snapshot(),
		}
	}
	return out
}

// Command returns a command that runs name inside namespace ns (through `ip
// netns exec`). Processes still running in the lab's namespaces are killed by
// Close.
func (l *spaces) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	nsName, ok := l.names[ns]
	if !ok {
		// An exec.Cmd cannot carry an error before Start; make Start fail.
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
		return cmd
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsName, name}, args...)...)
}

// Run runs cmd inside namespace ns and waits for it, like cmd.Run. cmd must
// not have been started; its Path and Args are rewritten to go through `ip
// netns exec`.
func (l *spaces) Run(ns string, cmd *exec.Cmd) error {
	nsName, ok := l.names[ns]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("netlab: run: %w", err)
	}
	args := cmd.Args
	if len(args) == 0 {
		args = []string{cmd.Path}
	}
	cmd.Args = append([]string{"ip", "netns", "exec", nsName, cmd.Path}, args[1:]...)
	cmd.Path = ipPath
	return cmd.Run()
}

// Do runs fn on an OS thread that has joined namespace ns. Sockets created
// inside fn belong to ns for their whole life, whichever goroutine uses them
// later, so Listen, ListenPacket and Dial are built on it. fn must not start
// goroutines that create sockets. The thread is discarded afterwards.
func (l *spaces) Do(ns string, fn func() error) error {
	if l.closed.Load() {
		return ErrClosed
	}
	nsName, ok := l.names[ns]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownNamespace, ns)
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the goroutine exits locked, so the runtime ends the
		// thread instead of reusing it in the wrong namespace.
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join(netnsDir, nsName))
		if err != nil {
			errc <- fmt.Errorf("netlab: open namespace: %w", err)
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("netlab: setns %s: %w", nsName, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Listen is net.Listen inside namespace ns.
func (l *spaces) Listen(ns, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := l.Do(ns, func() error {
		var err error
		ln, err = net.Listen(network, address)
		return err
	})
	return ln, err
}

// ListenPacket is net.ListenPacket inside namespace ns.
func (l *spaces) ListenPacket(ns, network, address string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := l.Do(ns, func() error {
		var err error
		pc, err = net.ListenPacket(network, address)
		return err
	})
	return pc, err
}

// ListenUDP is net.ListenUDP inside namespace ns (quic.Transport wants a
// *net.UDPConn).
func (l *spaces) ListenUDP(ns string, laddr netip.AddrPort) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := l.Do(ns, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(laddr))
		return err
	})
	return c, err
}

// Dial is (&net.Dialer{}).DialContext inside namespace ns.
func (l *spaces) Dial(ctx context.Context, ns, network, address string) (net.Conn, error) {
	var c net.Conn
	err := l.Do(ns, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// Close stops the forwarders, kills processes left in the namespaces and
// deletes them. It is idempotent and safe on a half-built lab.
func (l *Lab) Close() error {
	l.once.Do(func() {
		l.closed.Store(true)
		if l.cancel != nil {
			l.cancel()
		}
		var errs []error
		for _, p := range l.paths {
			for _, d := range p.devs {
				if d != nil {
					errs = append(errs, d.close())
				}
			}
		}
		l.wg.Wait()
		ctx := context.Background()
		for _, role := range []string{Sender, Receiver} {
			errs = append(errs, removeNamespace(ctx, l.names[role]))
		}
		if err := errors.Join(errs...); err != nil {
			l.cerr = fmt.Errorf("netlab: close: %w", err)
		}
	})
	return l.cerr
}

// removeNamespace kills every process in ns and deletes it. A namespace that
// does not exist is not an error.
func removeNamespace(ctx context.Context, ns string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, ns)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	killNamespacePids(ctx, ns)
	return ipCmd(ctx, "netns", "del", ns)
}

func killNamespacePids(ctx context.Context, ns string) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid == self {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// sweepStale removes namespaces named prefix-PID-... whose PID is gone: the
// leftovers of a test binary that was killed before it could Close.
func sweepStale(ctx context.Context, prefix string) {
	ents, err := os.ReadDir(netnsDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = removeNamespace(ctx, e.Name())
		}
	}
}

func ipCmd(ctx context.Context, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// tunDevice is a TUN file descriptor in non-blocking mode, driven by the Go
// poller.
type tunDevice struct {
	f  *os.File
	rc syscall.RawConn
}

func openTUN(name string) (*tunDevice, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &tunDevice{f: f, rc: rc}, nil
}

func (d *tunDevice) readBatch(bufs [][]byte, sizes []int) (int, error) {
	n := 0
	var rerr error
	err := d.rc.Read(func(fd uintptr) bool {
		for n < len(bufs) {
			m, err := unix.Read(int(fd), bufs[n])
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				break
			}
			if err != nil {
				rerr = err
				return true
			}
			sizes[n] = m
			n++
		}
		return n > 0
	})
	if err != nil {
		return n, err
	}
	if rerr != nil && n == 0 {
		return 0, rerr
	}
	return n, nil
}

func (d *tunDevice) write(p []byte) error {
	var werr error
	err := d.rc.Write(func(fd uintptr) bool {
		for {
			_, werr = unix.Write(int(fd), p)
			if werr == unix.EINTR {
				continue
			}
			return werr != unix.EAGAIN
		}
	})
	if err != nil {
		return err
	}
	return werr
}

func (d *tunDevice) close() error { return d.f.Close() }

// addNamespace creates network namespace ns with its loopback up and no
// IPv6: router solicitations and MLD reports would otherwise cross the
// impaired paths and skew the counters. do runs a function inside it.
func addNamespace(ctx context.Context, ns string, do func(func() error) error) error {
	if err := ipCmd(ctx, "netns", "add", ns); err != nil {
		return err
	}
	if err := ipCmd(ctx, "-n", ns, "link", "set", "lo", "up"); err != nil {
		return err
	}
	err := do(func() error {
		for _, k := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disable ipv6 in %s: %w", ns, err)
	}
	return nil
}
