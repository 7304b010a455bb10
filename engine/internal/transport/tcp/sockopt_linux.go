package tcp

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// bufferSize is the socket buffer we would like for bulk transfer. Linux
// disables its own buffer autotuning (which grows to tcp_rmem/tcp_wmem max,
// 6 MiB/4 MiB by default) on a socket whose SO_RCVBUF/SO_SNDBUF is set, so we
// only set it where the kernel lets us have at least this much (rmem_max,
// wmem_max); otherwise autotuning does better than a clamped fixed size.
const bufferSize = 8 << 20

var sysctlMax = sync.OnceValues(func() (rmem, wmem int) {
	return readSysctl("/proc/sys/net/core/rmem_max"), readSysctl("/proc/sys/net/core/wmem_max")
})

func readSysctl(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// control applies the congestion control before connect/listen, so the
// handshake already runs under it; accepted sockets inherit it.
//
// Without Config.TCPCongestion, BBR is asked for, best effort: on long and
// lossy paths TLS over TCP with BBR beats Cubic and QUIC (whose congestion
// control is Reno-style and cannot be changed) by a wide margin; see
// docs/transport-choice.md. Where BBR is not allowed the kernel default stays.
func control(cfg transport.Config) func(network, address string, rc syscall.RawConn) error {
	cc := cfg.TCPCongestion
	return func(network, address string, rc syscall.RawConn) error {
		if cc == "" {
			rc.Control(func(fd uintptr) {
				unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "bbr")
			})
			return nil
		}
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return os.NewSyscallError("setsockopt TCP_CONGESTION "+cc, serr)
		}
		return nil
	}
}

// deferAccept is how long, in seconds, the kernel keeps a connection that
// sent nothing from the listener (TCP_DEFER_ACCEPT; it rounds up to its
// SYN-ACK retransmissions, 1 s then 3 s): every Ferry dialer speaks first
// (its TLS ClientHello), so a real connection is accepted once its first
// bytes are there, and starts above any idle one (join.Talking, see
// arrived), while idle ones from a flood reach the accept loop only later
// (issue #27: a flood from the real sender's own address). The kernel then
// hands them over anyway, and they churn among themselves.
const deferAccept = 1

// listenControl is control for the listening socket, with TCP_DEFER_ACCEPT.
func listenControl(cfg transport.Config) func(network, address string, rc syscall.RawConn) error {
	base := control(cfg)
	return func(network, address string, rc syscall.RawConn) error {
		if err := base(network, address, rc); err != nil {
			return err
		}
		rc.Control(func(fd uintptr) { // best effort
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, deferAccept)
		})
		return nil
	}
}

// BBR reports whether this device's TCP connections will run BBR with cfg:
// it asks a fresh socket for it, as control does. Unprivileged processes
// get it only where net.ipv4.tcp_allowed_congestion_control lists it (or it
// is the default), which typical desktops do not.
func BBR(cfg transport.Config) bool {
	if cfg.TCPCongestion != "" {
		return cfg.TCPCongestion == "bbr"
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, "bbr") == nil
}

// setOptions tunes one connected socket, best effort.
func setOptions(c *net.TCPConn, cfg transport.Config) {
	rmax, wmax := sysctlMax()
	if rmax >= bufferSize {
		c.SetReadBuffer(bufferSize)
	}
	if wmax >= bufferSize {
		c.SetWriteBuffer(bufferSize)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(cfg.UserTimeout/time.Millisecond))
	})
}

// stats is what TCP_INFO tells us about one connection.
type stats struct {
	srtt, minRTT time.Duration
	cwnd         int64 // bytes
	retrans      int64 // segments retransmitted over the connection's life
	sent         int64 // data segments sent over the connection's life, retransmissions included
	cc           string
}

func tcpInfo(c *net.TCPConn) (stats, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return stats{}, false
	}
	var (
		info *unix.TCPInfo
		ierr error
	)
	var cc string
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		cc, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil || ierr != nil {
		return stats{}, false
	}
	return stats{
		cc:      strings.TrimRight(cc, "\x00"),
		srtt:    time.Duration(info.Rtt) * time.Microsecond,
		minRTT:  time.Duration(info.Min_rtt) * time.Microsecond,
		cwnd:    int64(info.Snd_cwnd) * int64(info.Snd_mss),
		retrans: int64(info.Total_retrans),
		sent:    int64(info.Data_segs_out),
	}, true
}
