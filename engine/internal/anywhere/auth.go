package anywhere

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pion/turn/v5"
)

// The relay secret: a secret the user sets on their relay and on their
// devices (ferry-cli relay --secret-file, receive/send --relay-secret-file,
// the app's setting beside the relay), so that only their devices use the
// relay's TURN and mailbox. TURN takes the TURN REST API's time-limited
// credentials, the scheme of coturn's use-auth-secret/static-auth-secret:
// username "EXPIRY:ferry", password base64(HMAC-SHA1(secret, username));
// a mailbox request carries an HMAC of itself (SignRequest). A relay
// without a secret takes the public TURN credentials (TURNUser) and
// unsigned mailbox requests, as before relay secrets.

// TURNUser and TURNPassword are the TURN credentials of a relay without a
// secret. They are public: anyone who reaches such a relay can relay
// through it (it says so when it starts).
const (
	TURNUser     = "ferry"
	TURNPassword = "ferry"
	// TURNRealm is the relay's TURN realm.
	TURNRealm = "ferry"
)

// turnName is the name part of a TURN REST username: the same for every
// device, so the relay learns no device's identity from it.
const turnName = "ferry"

// CredentialTTL is how long the TURN credentials of one call stay valid.
// The relay checks them on every TURN request of the allocation (refresh,
// permission, channel), so a relayed session lasts at most this long; the
// transfer then reconnects through a new call and resumes.
const CredentialTTL = 24 * time.Hour

// signedFor is how long a mailbox request's signature is valid, and
// maxSignedAhead how far ahead of the relay's clock its expiry may be (a
// device's clock may run ahead of the relay's).
const (
	signedFor      = 10 * time.Minute
	maxSignedAhead = time.Hour
)

// MinSecretLen is the shortest relay secret taken: the secret is the key
// of HMACs an eavesdropper sees, so a short one could be guessed offline.
const MinSecretLen = 16

// maxSecretLen bounds a relay secret (it is read from a file).
const maxSecretLen = 1024

// ErrRelaySecret marks a relay that refused this device's relay secret:
// wrong, missing, expired, or given to a relay that has none.
var ErrRelaySecret = errors.New("relay secret refused")

// Headers of the mailbox's authentication.
const (
	// HeaderAuth carries a request's signature: "EXPIRY MAC", EXPIRY in
	// Unix seconds, MAC the unpadded base64url of SignRequest's HMAC.
	HeaderAuth = "Ferry-Relay-Auth"
	// HeaderSecret is set on a refusal (401) and says why: SecretRequired
	// (the relay has a secret; the request's signature is missing, wrong or
	// expired) or SecretNone (the relay has none, the device sent one).
	HeaderSecret   = "Ferry-Relay-Secret"
	SecretRequired = "required"
	SecretNone     = "none"
)

// CleanSecret is a relay secret as the user gave it (a file's content, an
// environment variable): surrounding white space trimmed; an error when it
// is too short, too long, or holds control characters.
func CleanSecret(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case len(s) < MinSecretLen:
		return "", fmt.Errorf("a relay secret has at least %d characters (this one has %d): make one with `head -c 24 /dev/urandom | base64`", MinSecretLen, len(s))
	case len(s) > maxSecretLen:
		return "", fmt.Errorf("a relay secret has at most %d characters", maxSecretLen)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", errors.New("a relay secret is one line of printable characters")
	}
	return s, nil
}

// turnCredentials are the TURN username and password a device presents
// to a relay with secret (the public ones when secret is "").
func turnCredentials(secret string) (user, password string) {
	if secret == "" {
		return TURNUser, TURNPassword
	}
	user, password, err := turn.GenerateLongTermTURNRESTCredentials(secret, turnName, CredentialTTL)
	if err != nil { // HMAC's Write does not fail
		return TURNUser, TURNPassword
	}
	return user, password
}

// SignRequest is the HeaderAuth value of a mailbox request: an HMAC of
// the method, path, body and expiry under the relay secret. Bound to the
// request, a signature seen on the wire only repeats that request (the
// same blob put again, the same boxes read or emptied) until it expires:
// no more than an eavesdropper on the path, who can drop the packets
// anyway, could do.
func SignRequest(secret, method, path string, body []byte, now time.Time) string {
	exp := now.Add(signedFor).Unix()
	return strconv.FormatInt(exp, 10) + " " + base64.RawURLEncoding.EncodeToString(requestMAC(secret, exp, method, path, body))
}

func requestMAC(secret string, exp int64, method, path string, body []byte) []byte {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "ferry relay mailbox 1\n%d\n%s\n%s\n", exp, method, path)
	m.Write(sum[:])
	return m.Sum(nil)
}

// CheckRequest checks a mailbox request's HeaderAuth value (from a peer:
// anything) against the relay's secret.
func CheckRequest(secret, header, method, path string, body []byte, now time.Time) error {
	exp, mac, err := parseAuth(header)
	if err != nil {
		return err
	}
	switch t := time.Unix(exp, 0); {
	case now.After(t):
		return fmt.Errorf("%w: expired %s ago", ErrRelaySecret, now.Sub(t).Round(time.Second))
	case t.Sub(now) > maxSignedAhead:
		return fmt.Errorf("%w: expires too far ahead (the device's clock is off?)", ErrRelaySecret)
	}
	if !hmac.Equal(mac, requestMAC(secret, exp, method, path, body)) {
		return fmt.Errorf("%w: wrong signature", ErrRelaySecret)
	}
	return nil
}

const base64URLLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// parseAuth reads a HeaderAuth value: "EXPIRY MAC".
func parseAuth(h string) (exp int64, mac []byte, err error) {
	if h == "" {
		return 0, nil, fmt.Errorf("%w: the request is not signed", ErrRelaySecret)
	}
	if len(h) > 128 {
		return 0, nil, fmt.Errorf("%w: signature of %d bytes", ErrRelaySecret, len(h))
	}
	es, ms, ok := strings.Cut(h, " ")
	if !ok || es == "" || len(es) > 12 || strings.Trim(es, "0123456789") != "" {
		return 0, nil, fmt.Errorf("%w: malformed signature", ErrRelaySecret)
	}
	exp, err = strconv.ParseInt(es, 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: malformed expiry", ErrRelaySecret)
	}
	// Exactly the encoding's letters: the decoder skips line breaks.
	if len(ms) != base64.RawURLEncoding.EncodedLen(sha256.Size) || strings.Trim(ms, base64URLLetters) != "" {
		return 0, nil, fmt.Errorf("%w: malformed signature", ErrRelaySecret)
	}
	mac, err = base64.RawURLEncoding.Strict().DecodeString(ms) // Strict: one spelling per MAC (the last letter's unused bits must be zero)
	if err != nil || len(mac) != sha256.Size {
		return 0, nil, fmt.Errorf("%w: malformed signature", ErrRelaySecret)
	}
	return exp, mac, nil
}
