package engine

import (
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpCongestion names the congestion control set on every Ferry TCP socket
// (TCP_CONGESTION: "reno", "cubic", "bbr"... as allowed by
// net.ipv4.tcp_allowed_congestion_control). Empty keeps the kernel default.
// FERRY_TCP_CC sets it for the lab.
var tcpCongestion = os.Getenv("FERRY_TCP_CC")

// tcpBufferSize is the socket buffer we would like for bulk transfer. Linux
// disables its own buffer autotuning (which grows to tcp_rmem/tcp_wmem max,
// 6 MiB/4 MiB by default) on a socket whose SO_RCVBUF/SO_SNDBUF is set, so we
// only set it where the kernel lets us have at least this much (rmem_max,
// wmem_max); otherwise autotuning does better than a clamped fixed size.
var tcpBufferSize = 8 << 20

// tcpUserTimeout fails a connection whose sent data stays unacknowledged this long.
var tcpUserTimeout = 30 * time.Second

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

// tcpControl applies the congestion control before connect/listen, so the
// handshake already runs under it; accepted sockets inherit it.
//
// Without FERRY_TCP_CC, BBR is asked for, best effort: in the lab, TLS over
// TCP with BBR finished workload B at 120 ms / 2 % loss ~37x faster than with
// Cubic and than QUIC (whose congestion control is Reno-style and cannot be
// changed); see docs/transport-choice.md. Where BBR is not allowed the
// kernel default stays.
func tcpControl(network, address string, rc syscall.RawConn) error {
	if tcpCongestion == "" {
		rc.Control(func(fd uintptr) {
			unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "bbr")
		})
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, tcpCongestion)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("setsockopt TCP_CONGESTION "+tcpCongestion, serr)
	}
	return nil
}

// setTCPOptions tunes one connected socket, best effort.
func setTCPOptions(c *net.TCPConn) {
	rmax, wmax := sysctlMax()
	if tcpBufferSize > 0 && rmax >= tcpBufferSize {
		c.SetReadBuffer(tcpBufferSize)
	}
	if tcpBufferSize > 0 && wmax >= tcpBufferSize {
		c.SetWriteBuffer(tcpBufferSize)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(tcpUserTimeout/time.Millisecond))
	})
}

// tcpStats is what TCP_INFO tells us about one connection.
type tcpStats struct {
	srtt, minRTT time.Duration
	cwnd         int64 // bytes
	retrans      int64 // segments retransmitted over the connection's life
	cc           string
}

func tcpInfo(c *net.TCPConn) (tcpStats, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return tcpStats{}, false
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
		return tcpStats{}, false
	}
	return tcpStats{
		cc:      strings.TrimRight(cc, "\x00"),
		srtt:    time.Duration(info.Rtt) * time.Microsecond,
		minRTT:  time.Duration(info.Min_rtt) * time.Microsecond,
		cwnd:    int64(info.Snd_cwnd) * int64(info.Snd_mss),
		retrans: int64(info.Total_retrans),
	}, true
}
