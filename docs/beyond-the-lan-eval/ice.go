//go:build !noice

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/stun/v4"
	"github.com/quic-go/quic-go"
)

// icePeer is one side of the pion/ice case: gather host, server-reflexive
// (STUN) and relay (TURN) candidates, swap them through dir, let ICE pick
// a pair, then run QUIC (quic-go, as Ferry does) over the ICE connection
// and move n bytes on one stream from side a to side b.
//
// With shared, ICE and quic-go share one UDP socket (ICE reads the non-QUIC
// packets quic-go hands over, through a UDPMux), and QUIC runs on that
// socket straight to the address ICE chose, unless the pair is relayed.
func icePeer(ctx context.Context, side, dir, server string, n int64, shared bool) result {
	start := time.Now()
	res := result{Engine: "pion/ice", Path: "none"}
	if shared {
		res.Engine = "pion/ice, shared socket"
	}
	fail := func(err error) result { res.Err = err.Error(); res.Connect = time.Since(start).Seconds(); return res }
	stunURI, err := stun.ParseURI("stun:" + server)
	if err != nil {
		return fail(err)
	}
	turnURI, err := stun.ParseURI("turn:" + server + "?transport=udp")
	if err != nil {
		return fail(err)
	}
	turnURI.Username, turnURI.Password = "ferry", "ferry"
	cfg := &ice.AgentConfig{
		Urls:           []*stun.URI{stunURI, turnURI},
		NetworkTypes:   []ice.NetworkType{ice.NetworkTypeUDP4},
		CandidateTypes: candidateTypes(),
	}
	var tr *quic.Transport
	if shared {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{})
		if err != nil {
			return fail(err)
		}
		tr = &quic.Transport{Conn: udp}
		defer tr.Close()
		mctx, stop := context.WithCancel(ctx)
		defer stop()
		mux := ice.NewUniversalUDPMuxDefault(ice.UniversalUDPMuxParams{UDPConn: &nonQUIC{ctx: mctx, tr: tr, local: udp.LocalAddr()}})
		defer mux.Close()
		cfg.UDPMux, cfg.UDPMuxSrflx = mux, mux
	}
	agent, err := ice.NewAgent(cfg)
	if err != nil {
		return fail(err)
	}
	defer agent.Close()
	var cands []string
	gathered := make(chan struct{})
	agent.OnCandidate(func(c ice.Candidate) {
		if c == nil {
			close(gathered)
			return
		}
		cands = append(cands, c.Marshal())
		fmt.Fprintln(os.Stderr, "local candidate:", c.Marshal())
	})
	if err := agent.GatherCandidates(); err != nil {
		return fail(err)
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	ufrag, pwd, _ := agent.GetLocalUserCredentials()
	type offer struct {
		Ufrag, Pwd string
		Cands      []string
	}
	peer := "b"
	if side == "b" {
		peer = "a"
	}
	raw, err := exchange(ctx, dir, "ice-"+side, "ice-"+peer, offer{ufrag, pwd, cands})
	if err != nil {
		return fail(err)
	}
	var theirs offer
	if err := json.Unmarshal(raw, &theirs); err != nil {
		return fail(err)
	}
	for _, s := range theirs.Cands {
		c, err := ice.UnmarshalCandidate(s)
		if err != nil {
			return fail(err)
		}
		if err := agent.AddRemoteCandidate(c); err != nil {
			return fail(err)
		}
	}
	var conn *ice.Conn
	if side == "a" {
		conn, err = agent.Dial(ctx, theirs.Ufrag, theirs.Pwd)
	} else {
		conn, err = agent.Accept(ctx, theirs.Ufrag, theirs.Pwd)
	}
	if err != nil {
		return fail(fmt.Errorf("ice: %w", err))
	}
	pair, err := agent.GetSelectedCandidatePair()
	if err != nil {
		return fail(err)
	}
	res.Detail = fmt.Sprintf("%s %s <-> %s %s", pair.Local.Type(), pair.Local.Address(), pair.Remote.Type(), pair.Remote.Address())
	res.Path = "direct"
	if pair.Local.Type() == ice.CandidateTypeRelay || pair.Remote.Type() == ice.CandidateTypeRelay {
		res.Path = "relayed"
	}
	peerAddr := conn.RemoteAddr()
	// A relay candidate of our own is pion's TURN client: QUIC goes through
	// ICE's connection. Otherwise the pair's local end is the shared
	// socket, and QUIC writes to the remote end (a peer, or the peer's
	// TURN relay) straight from it.
	if !shared || pair.Local.Type() == ice.CandidateTypeRelay {
		tr = &quic.Transport{Conn: &icePacketConn{c: conn, remote: conn.RemoteAddr()}}
		defer tr.Close()
	} else {
		res.Detail += " (QUIC on the shared socket)"
	}
	srvTLS, cliTLS := tlsPair()
	qcfg := &quic.Config{MaxIdleTimeout: 10 * time.Second}
	if side == "b" {
		ln, err := tr.Listen(srvTLS, qcfg)
		if err != nil {
			return fail(err)
		}
		qc, err := ln.Accept(ctx)
		if err != nil {
			return fail(err)
		}
		st, err := qc.AcceptStream(ctx)
		if err != nil {
			return fail(err)
		}
		got, err := io.Copy(io.Discard, st)
		res.Bytes = got
		if err != nil {
			return fail(err)
		}
		st.Close()
		<-qc.Context().Done()
		return res
	}
	qc, err := tr.Dial(ctx, peerAddr, cliTLS, qcfg)
	if err != nil {
		return fail(fmt.Errorf("quic over ice: %w", err))
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		return fail(err)
	}
	res.Connect = time.Since(start).Seconds()
	t0 := time.Now()
	if err := pump(st, n); err != nil {
		return fail(err)
	}
	st.Close()
	// b closes its side after reading everything: the bytes arrived.
	if _, err := io.Copy(io.Discard, st); err != nil {
		return fail(err)
	}
	res.Bytes = n
	res.MBps = float64(n) / 1e6 / time.Since(t0).Seconds()
	qc.CloseWithError(0, "")
	return res
}

// icePacketConn lets quic-go run over an ICE connection: ICE owns the
// sockets and the chosen pair (which it may change); QUIC sees one fixed
// peer address.
type icePacketConn struct {
	c      *ice.Conn
	remote net.Addr
}

func (p *icePacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, err := p.c.Read(b)
	return n, p.remote, err
}
func (p *icePacketConn) WriteTo(b []byte, _ net.Addr) (int, error) { return p.c.Write(b) }
func (p *icePacketConn) Close() error                              { return p.c.Close() }
func (p *icePacketConn) LocalAddr() net.Addr                       { return p.c.LocalAddr() }
func (p *icePacketConn) SetDeadline(t time.Time) error             { return p.c.SetDeadline(t) }
func (p *icePacketConn) SetReadDeadline(t time.Time) error         { return p.c.SetReadDeadline(t) }
func (p *icePacketConn) SetWriteDeadline(t time.Time) error        { return p.c.SetWriteDeadline(t) }

// candidateTypes are all three unless EVAL_ICE_TYPES=relay (relay only,
// to check the TURN path by itself).
func candidateTypes() []ice.CandidateType {
	if os.Getenv("EVAL_ICE_TYPES") == "relay" {
		return []ice.CandidateType{ice.CandidateTypeRelay}
	}
	return []ice.CandidateType{ice.CandidateTypeHost, ice.CandidateTypeServerReflexive, ice.CandidateTypeRelay}
}

// nonQUIC is the socket as ICE sees it when it shares it with quic-go:
// the packets quic-go did not take (STUN), and writes through quic-go's
// transport.
type nonQUIC struct {
	ctx   context.Context
	tr    *quic.Transport
	local net.Addr
}

func (p *nonQUIC) ReadFrom(b []byte) (int, net.Addr, error)  { return p.tr.ReadNonQUICPacket(p.ctx, b) }
func (p *nonQUIC) WriteTo(b []byte, a net.Addr) (int, error) { return p.tr.WriteTo(b, a) }
func (p *nonQUIC) Close() error                              { return nil } // the transport's owner closes it
func (p *nonQUIC) LocalAddr() net.Addr                       { return p.local }
func (p *nonQUIC) SetDeadline(t time.Time) error             { return nil }
func (p *nonQUIC) SetReadDeadline(t time.Time) error         { return nil }
func (p *nonQUIC) SetWriteDeadline(t time.Time) error        { return nil }
