package identity

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// ALPN is the application protocol Ferry negotiates on QUIC and TCP alike.
const ALPN = "ferry/1"

// ErrNoPeerCert is returned when a peer presents no certificate.
var ErrNoPeerCert = errors.New("peer presented no certificate")

// PeerID returns the device ID proven by a finished TLS handshake.
func PeerID(cs tls.ConnectionState) (DeviceID, error) {
	if len(cs.PeerCertificates) == 0 {
		return DeviceID{}, ErrNoPeerCert
	}
	return IDFromCert(cs.PeerCertificates[0]), nil
}

// TLSConfig returns a TLS 1.3-only, mutually authenticated configuration.
// Certificates are self-signed, so chain verification is off and trust comes
// from pinning: verify gets the peer's device ID and refuses the handshake by
// returning an error. It runs in VerifyConnection, which (unlike
// VerifyPeerCertificate) also runs on resumed sessions.
func (id *Identity) TLSConfig(server bool, verify func(DeviceID) error) *tls.Config {
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.Cert},
		NextProtos:   []string{ALPN},
		// Chain verification is replaced by VerifyConnection's pinning below.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.NegotiatedProtocol != ALPN {
				return fmt.Errorf("peer does not speak %s", ALPN)
			}
			pid, err := PeerID(cs)
			if err != nil {
				return err
			}
			if verify != nil {
				return verify(pid)
			}
			return nil
		},
	}
	if server {
		cfg.ClientAuth = tls.RequireAnyClientCert
	}
	return cfg
}
