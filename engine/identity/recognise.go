package identity

import (
	"crypto/x509"

	"github.com/ferrydrop/ferry/engine/peer"
)

// Recognise names the peer behind a certificate presented over another
// protocol than Ferry's own (LocalSend's TLS): the Ferry device whose key
// it carries when this store knows that device, else its LocalSend
// fingerprint. Ferry presents its identity certificate on every protocol,
// and the TLS handshake that presented cert proved its key, so a Ferry
// device reached over LocalSend is recognised as the device it is over
// Ferry (trusted, named, paired alike); any other LocalSend device is known
// by its fingerprint (docs/architecture.md, "Peers").
func (s *Store) Recognise(cert *x509.Certificate) peer.ID {
	if ferry := IDFromCert(cert).Peer(); s.known(ferry) {
		return ferry
	}
	return peer.FromCertificate(cert.Raw)
}

func (s *Store) known(id peer.ID) bool {
	_, ok := s.Get(id)
	return ok
}
