//go:build !linux

package tcp

import (
	"net"
	"syscall"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// bufferSize is requested best effort on platforms without Linux's autotuning trade-off.
const bufferSize = 4 << 20

// control: the congestion control (TCP_CONGESTION) is Linux-only; elsewhere
// the kernel default is used and Config.TCPCongestion is ignored.
func control(cfg transport.Config) func(network, address string, rc syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error { return nil }
}

// listenControl is control: without Linux's TCP_DEFER_ACCEPT, idle
// connections reach the accept loop at once, where the gate's places
// (join.Stage) make them churn among themselves.
func listenControl(cfg transport.Config) func(network, address string, rc syscall.RawConn) error {
	return control(cfg)
}

// BBR reports whether this device's TCP connections will run BBR: no, the
// choice is Linux's (TCP_CONGESTION).
func BBR(cfg transport.Config) bool { return false }

func setOptions(c *net.TCPConn, cfg transport.Config) {
	c.SetReadBuffer(bufferSize)
	c.SetWriteBuffer(bufferSize)
}

// stats is what the platform tells us about one connection: nothing here.
type stats struct {
	srtt, minRTT time.Duration
	cwnd         int64
	retrans      int64
	sent         int64
	cc           string
}

func tcpInfo(c *net.TCPConn) (stats, bool) { return stats{}, false }
