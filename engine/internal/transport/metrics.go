package transport

// Metrics is a snapshot of one connection's transport metrics. Fields a
// transport cannot measure stay zero: TCP has no path MTU probing of its own
// and its RTT comes from TCP_INFO where the platform has it. QUIC's come
// without a qlog tracer (it costs throughput): ConnectionStats, the socket
// wrapper, and a window watcher for congestion events; the path MTU shows on
// the side that sends full-size packets.
type Metrics struct {
	Transport string `json:"transport"`
	// CongestionControl: "bbr", "cubic"... for TCP; QUIC's (quic-go) is always Reno-style.
	CongestionControl string  `json:"congestion_control,omitempty"`
	SmoothedRTTms     float64 `json:"srtt_ms"`
	MinRTTms          float64 `json:"min_rtt_ms"`
	LatestRTTms       float64 `json:"latest_rtt_ms"`
	CongestionWindow  int64   `json:"cwnd_bytes"`
	CongestionEvents  int64   `json:"congestion_events"`
	PacketsLost       int64   `json:"packets_lost"`
	BytesLost         int64   `json:"bytes_lost"`
	DatagramsSent     int64   `json:"datagrams_sent"`
	DatagramsRecv     int64   `json:"datagrams_received"`
	BytesSent         int64   `json:"bytes_sent"`
	BytesRecv         int64   `json:"bytes_received"`
	SendCalls         int64   `json:"send_calls"` // write syscalls on the socket; DatagramsSent/SendCalls shows GSO at work
	// RecvCalls counts receive syscalls on the socket and RecvDatagrams the
	// datagrams they brought in; RecvDatagrams/RecvCalls shows GRO at work.
	RecvCalls     int64 `json:"recv_calls,omitempty"`
	RecvDatagrams int64 `json:"recv_call_datagrams,omitempty"`
	GRO           bool  `json:"gro,omitempty"`
	PathMTU       int   `json:"path_mtu"`
	GSO           bool  `json:"gso"`
	RecvBuffer    int   `json:"udp_recv_buffer"` // what the kernel granted
	SendBuffer    int   `json:"udp_send_buffer"`
	Connections   int   `json:"connections,omitempty"` // TCP: parallel connections in use
}

// DatagramsPerCall is DatagramsSent / SendCalls, or 0 when nothing was sent.
func (m Metrics) DatagramsPerCall() float64 {
	if m.SendCalls == 0 {
		return 0
	}
	return float64(m.DatagramsSent) / float64(m.SendCalls)
}

// DatagramsPerRecvCall is RecvDatagrams / RecvCalls, or 0 when nothing was
// received.
func (m Metrics) DatagramsPerRecvCall() float64 {
	if m.RecvCalls == 0 {
		return 0
	}
	return float64(m.RecvDatagrams) / float64(m.RecvCalls)
}
