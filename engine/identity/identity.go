// Package identity holds this device's key pair and self-signed certificate,
// the device ID derived from it, and the trust store that pins peers by ID
// (package peer names them, whatever protocol proved who they are).
package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// DeviceID is the SHA-256 of a device certificate's SubjectPublicKeyInfo.
type DeviceID [32]byte

// IDFromCert computes the device ID of a certificate.
func IDFromCert(cert *x509.Certificate) DeviceID {
	return sha256.Sum256(cert.RawSubjectPublicKeyInfo)
}

// String is the full ID: 52 upper-case base32 characters.
func (id DeviceID) String() string { return peer.FerryKey(id) }

// Peer is the device's peer ID (kind peer.Ferry).
func (id DeviceID) Peer() peer.ID { return peer.FromFerry(id) }

// DeviceOf is the device ID of a Ferry peer; false for another kind.
func DeviceOf(p peer.ID) (DeviceID, bool) {
	if p.Kind != peer.Ferry {
		return DeviceID{}, false
	}
	sum, err := peer.ParseFerryKey(p.Key)
	if err != nil {
		return DeviceID{}, false
	}
	return DeviceID(sum), true
}

// Human is the full ID in groups of four, for reading aloud and comparing.
func (id DeviceID) Human() string { return id.Peer().Human() }

// Short is the first eight characters, enough to tell devices apart in a
// list, as every screen shows them: "PT27-TYCL" (deviceid.Short).
func (id DeviceID) Short() string { return deviceid.Short(id.String()) }

// IsZero reports whether id is unset.
func (id DeviceID) IsZero() bool { return id == DeviceID{} }

// ErrBadID is returned by ParseID for text that is not a device ID.
var ErrBadID = peer.ErrBadID

// ParseID accepts the full or human form (dashes, spaces and case are ignored).
func ParseID(s string) (DeviceID, error) {
	sum, err := peer.ParseFerryKey(s)
	return DeviceID(sum), err
}

// Identity is this device's certificate and key.
type Identity struct {
	Cert tls.Certificate
	ID   DeviceID
}

const (
	certFile = "identity.crt"
	keyFile  = "identity.key"
)

// LoadOrCreate reads the identity from dir, creating a new key pair and
// certificate on first run. Files are written atomically with mode 0600.
func LoadOrCreate(dir string) (*Identity, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	// A process killed while it wrote them left its temp files.
	atomicfile.RemoveLeftovers(filepath.Join(dir, certFile))
	atomicfile.RemoveLeftovers(filepath.Join(dir, keyFile))
	certPEM, err1 := os.ReadFile(filepath.Join(dir, certFile))
	keyPEM, err2 := os.ReadFile(filepath.Join(dir, keyFile))
	switch {
	case err1 == nil && err2 == nil:
		id, err := fromPEM(certPEM, keyPEM)
		if err != nil {
			// Never replaced here: a new key is a new device to everyone
			// that knows this one.
			return nil, fmt.Errorf("this device's key pair (%s and %s in %s) is damaged (%w): move both away to start as a new device (devices that know this one will see its key change)",
				certFile, keyFile, dir, errors.Unwrap(err))
		}
		return id, nil
	case errors.Is(err1, fs.ErrNotExist) && errors.Is(err2, fs.ErrNotExist):
		return create(dir)
	case errors.Is(err1, fs.ErrNotExist) && err2 == nil:
		// A first run ended (killed, a crash) between the key and its
		// certificate (create writes the key first): the certificate is
		// made again from the key. The device ID is the key's (IDFromCert),
		// so this is the same device, never a new one; it stayed unable to
		// start ("only one of ... exists") until someone moved the key away.
		return certify(dir, keyPEM)
	case err1 != nil && !errors.Is(err1, fs.ErrNotExist):
		return nil, fmt.Errorf("identity: %w", err1)
	case err2 != nil && !errors.Is(err2, fs.ErrNotExist):
		return nil, fmt.Errorf("identity: %w", err2)
	default:
		// The certificate without its key: create never leaves that.
		return nil, fmt.Errorf("identity: only one of %s and %s exists in %s; move the other away to create a new identity", certFile, keyFile, dir)
	}
}

func create(dir string) (*Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity: generate key: %w", err)
	}
	certPEM, err := certificate(key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	// Key first: a crash between the two leaves the key alone, which
	// LoadOrCreate certifies again (certify), never a new identity.
	if err := atomicfile.Write(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, certFile), certPEM, 0o600); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	return fromPEM(certPEM, keyPEM)
}

// certify makes and writes the certificate of the key keyPEM, the key of
// this device whose certificate is missing.
func certify(dir string, keyPEM []byte) (*Identity, error) {
	damaged := func(err error) error {
		return fmt.Errorf("this device's key (%s in %s, without its %s) is damaged (%w): move it away to start as a new device",
			keyFile, dir, certFile, err)
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, damaged(errors.New("no PEM block"))
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, damaged(err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, damaged(fmt.Errorf("a %T, not an ECDSA key", k))
	}
	certPEM, err := certificate(key)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, certFile), certPEM, 0o600); err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	return fromPEM(certPEM, keyPEM)
}

// certificate is a new self-signed certificate of key, in PEM.
func certificate(key *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "ferry device"},
		NotBefore:             time.Now().Add(-24 * time.Hour),
		NotAfter:              time.Now().AddDate(30, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("identity: create certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func fromPEM(certPEM, keyPEM []byte) (*Identity, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("identity: load key pair: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("identity: parse certificate: %w", err)
	}
	cert.Leaf = leaf
	return &Identity{Cert: cert, ID: IDFromCert(leaf)}, nil
}
