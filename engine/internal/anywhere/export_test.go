package anywhere

import (
	"context"
	"errors"
	"net"
	"time"
)

// RelayOnlyChecks runs ICE between two agents on loopback that can reach
// each other only through the relay (no check goes to an address but the
// relay's, relayIP: its relayed addresses), the caller given relayRTT as
// its round trip to the relay, and says how long the checks took and
// which path they chose.
func RelayOnlyChecks(ctx context.Context, relay string, relayIP net.IP, relayRTT time.Duration) (time.Duration, Path, error) {
	start := func(rtt time.Duration) (*agent, error) {
		cfg, err := agentConfig(relay, "", TestNet{Loopback: true}, nil, rtt, nil)
		if err != nil {
			return nil, err
		}
		cfg.RemoteIPFilter = func(ip net.IP) bool { return ip.Equal(relayIP) }
		return startAgent(ctx, cfg, true)
	}
	caller, err := start(relayRTT)
	if err != nil {
		return 0, Path{}, err
	}
	defer caller.close()
	callee, err := start(0)
	if err != nil {
		return 0, Path{}, err
	}
	defer callee.close()
	var call, answer Message
	caller.fill(&call)
	callee.fill(&answer)
	accepted := make(chan error, 1)
	go func() {
		_, err := callee.connect(ctx, call, false)
		accepted <- err
	}()
	t0 := time.Now()
	_, err = caller.connect(ctx, answer, true)
	took := time.Since(t0)
	if aerr := <-accepted; err == nil {
		err = aerr
	}
	return took, caller.path(), err
}

// WaitAnswer is waitAnswer, for the tests of the mailbox's waits.
func WaitAnswer(ctx context.Context, mb *Mailbox, req DialRequest, call string) (Message, error) {
	return waitAnswer(ctx, mb, req, call, "", time.Now)
}

// GatherRelayed gathers relayed candidates only on loopback, each TURN
// client's socket wrapped by under, and returns the agent's close.
func GatherRelayed(ctx context.Context, relay string, under func(net.PacketConn) net.PacketConn) (closeAgent func(), err error) {
	g, err := newAgent(ctx, relay, "", TestNet{Loopback: true, RelayOnly: true, UnderTURN: under}, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	return g.close, nil
}

// GatherRelayedN is GatherRelayed with n TURN clients on the relay, each
// with its own socket and allocation, as a device with n local addresses
// has.
func GatherRelayedN(ctx context.Context, relay string, n int, under func(net.PacketConn) net.PacketConn) (closeAgent func(), err error) {
	cfg, err := agentConfig(relay, "", TestNet{Loopback: true, RelayOnly: true, UnderTURN: under}, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	turn := cfg.Urls[len(cfg.Urls)-1]
	for range n - 1 {
		cfg.Urls = append(cfg.Urls, turn)
	}
	g, err := startAgent(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	return g.close, nil
}

// IsRelease is isRelease, for its table.
func IsRelease(p []byte) bool {
	_, ok := isRelease(p)
	return ok
}

// StaleNonce is staleNonce, for its table.
func StaleNonce(p []byte) (string, bool) {
	n, ok := staleNonce(p)
	return string(n), ok
}

// MaxStaleNonces is maxStaleNonces.
const MaxStaleNonces = maxStaleNonces

// Answers is answers, for its table.
func Answers(p, id []byte) bool {
	var tid [12]byte
	copy(tid[:], id)
	return answers(p, tid)
}

// Restarted is restarted, for its tests.
func Restarted(ctx context.Context, req DialRequest, instance string) bool {
	return errors.Is(goneAtRelay(ctx, req, instance), ErrPeerRestarted)
}
