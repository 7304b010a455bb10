package localsend

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Certificate file names under the directory LoadOrCreateCert is given.
const (
	certFile = "localsend-cert.pem"
	keyFile  = "localsend-key.pem"
)

// Fingerprint is LocalSend's identity of a device in HTTPS mode: the
// uppercase hex SHA-256 of its certificate's DER.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// SameFingerprint compares two fingerprints as the apps do, ignoring case.
func SameFingerprint(a, b string) bool { return a != "" && strings.EqualFold(a, b) }

// LoadOrCreateCert returns the certificate this device serves and presents
// as a LocalSend client, kept in dir (created when missing, mode 0700) as
// two PEM files; the first call creates it. The certificate is self-signed,
// RSA 2048 with CN "LocalSend User" like the official app's, so that every
// LocalSend client's checks accept it; it is valid for 10 years.
func LoadOrCreateCert(dir string) (tls.Certificate, error) {
	cp, kp := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
	certPEM, err1 := os.ReadFile(cp)
	keyPEM, err2 := os.ReadFile(kp)
	if err1 == nil && err2 == nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("localsend certificate in %s: %w (move the two files away to make a new one)", dir, err)
		}
		return c, nil
	}
	if !errors.Is(err1, fs.ErrNotExist) && err1 != nil {
		return tls.Certificate{}, fmt.Errorf("localsend certificate: %w", err1)
	}
	if !errors.Is(err2, fs.ErrNotExist) && err2 != nil {
		return tls.Certificate{}, fmt.Errorf("localsend certificate: %w", err2)
	}
	if (err1 == nil) != (err2 == nil) {
		// One of the two is there: never overwrite it silently.
		return tls.Certificate{}, fmt.Errorf("localsend certificate in %s: only one of %s and %s exists", dir, certFile, keyFile)
	}
	certPEM, keyPEM, err := NewCertPEM()
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, fmt.Errorf("localsend certificate: %w", err)
	}
	if err := writeNew(kp, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeNew(cp, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// writeNew writes a file that must not exist yet: temp, fsync, link.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("localsend certificate: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(mode); err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path) // fails if path appeared meanwhile: never overwritten
	}
	if err != nil {
		return fmt.Errorf("localsend certificate: %w", err)
	}
	return nil
}

// NewCertPEM makes a fresh self-signed certificate and its key, PEM-encoded.
func NewCertPEM() (certPEM, keyPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("localsend certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("localsend certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "LocalSend User"},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("localsend certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("localsend certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// CertFingerprint is the fingerprint of a loaded certificate's leaf.
func CertFingerprint(c tls.Certificate) string {
	if len(c.Certificate) == 0 {
		return ""
	}
	return Fingerprint(c.Certificate[0])
}
