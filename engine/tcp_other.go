//go:build !linux

package engine

import (
	"net"
	"syscall"
	"time"
)

// tcpCongestion is Linux-only (TCP_CONGESTION); elsewhere the kernel default is used.
var tcpCongestion = ""

// tcpBufferSize is requested best effort on platforms without Linux's autotuning trade-off.
var tcpBufferSize = 4 << 20

func tcpControl(network, address string, rc syscall.RawConn) error { return nil }

func setTCPOptions(c *net.TCPConn) {
	c.SetReadBuffer(tcpBufferSize)
	c.SetWriteBuffer(tcpBufferSize)
}

// tcpStats is what the platform tells us about one connection: nothing here.
type tcpStats struct {
	srtt, minRTT time.Duration
	cwnd         int64
	retrans      int64
	cc           string
}

func tcpInfo(c *net.TCPConn) (tcpStats, bool) { return tcpStats{}, false }
