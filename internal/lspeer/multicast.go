package lspeer

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"

	"golang.org/x/net/ipv4"
)

// Multicast is the peer's discovery on 224.0.0.167 over one interface.
type Multicast struct {
	p     *Peer
	conn  *net.UDPConn
	pc    *ipv4.PacketConn
	group *net.UDPAddr
	// AnswerWithRegister answers announcements with POST register (as the
	// 1.18 app does); otherwise, or when that fails, with UDP announce:false.
	AnswerWithRegister bool

	mu   sync.Mutex
	Seen []Heard
}

// Heard is one datagram the peer received from another device.
type Heard struct {
	Msg  map[string]any
	From string
}

// ListenMulticast joins the group on the interface named ifname, port port.
func (p *Peer) ListenMulticast(ifname string, port int) (*Multicast, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	group := &net.UDPAddr{IP: net.ParseIP("224.0.0.167"), Port: port}
	c, err := net.ListenMulticastUDP("udp4", ifi, group)
	if err != nil {
		return nil, err
	}
	pc := ipv4.NewPacketConn(c)
	if err := pc.SetMulticastInterface(ifi); err != nil {
		c.Close()
		return nil, err
	}
	_ = pc.SetMulticastTTL(1)
	return &Multicast{p: p, conn: c, pc: pc, group: group}, nil
}

// Announce sends announce:true to the group.
func (m *Multicast) Announce() error { return m.send(true) }

func (m *Multicast) send(announce bool) error {
	b, _ := json.Marshal(m.p.Info(&announce))
	_, err := m.pc.WriteTo(b, nil, m.group)
	return err
}

// Heard returns what the peer heard so far.
func (m *Multicast) Heard() []Heard {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Heard(nil), m.Seen...)
}

// Run reads datagrams until ctx ends, answering announcements.
func (m *Multicast) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { m.conn.Close() })
	defer stop()
	buf := make([]byte, 65536)
	for {
		n, from, err := m.conn.ReadFromUDP(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		var msg map[string]any
		if json.Unmarshal(buf[:n], &msg) != nil {
			continue
		}
		if fp, _ := msg["fingerprint"].(string); fp == m.p.Fingerprint {
			continue
		}
		m.mu.Lock()
		m.Seen = append(m.Seen, Heard{Msg: msg, From: from.IP.String()})
		m.mu.Unlock()
		if a, _ := msg["announce"].(bool); !a {
			continue
		}
		answered := false
		if m.AnswerWithRegister {
			port, _ := msg["port"].(float64)
			fp, _ := msg["fingerprint"].(string)
			addr := net.JoinHostPort(from.IP.String(), strconv.Itoa(int(port)))
			if _, err := m.p.Register(ctx, addr, fp); err == nil {
				answered = true
			}
		}
		if !answered {
			_ = m.send(false)
		}
	}
}
