package anywhere

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testSecret = "correct horse battery staple"

// TestSignRequest: a signature checks for its own request only, until it
// expires, and under its own secret only.
func TestSignRequest(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte("blob")
	sig := SignRequest(testSecret, "PUT", PathSlot+"ab", body, now)
	if err := CheckRequest(testSecret, sig, "PUT", PathSlot+"ab", body, now.Add(time.Minute)); err != nil {
		t.Fatalf("its own request: %v", err)
	}
	for _, tc := range []struct {
		name, secret, method, path, body string
		at                               time.Time
	}{
		{"another secret", "another secret, long enough", "PUT", PathSlot + "ab", "blob", now},
		{"another method", testSecret, "POST", PathSlot + "ab", "blob", now},
		{"another path", testSecret, "PUT", PathSlot + "ac", "blob", now},
		{"another body", testSecret, "PUT", PathSlot + "ab", "blob!", now},
		{"expired", testSecret, "PUT", PathSlot + "ab", "blob", now.Add(signedFor + time.Second)},
		{"from a clock far behind", testSecret, "PUT", PathSlot + "ab", "blob", now.Add(-2 * maxSignedAhead)},
	} {
		err := CheckRequest(tc.secret, sig, tc.method, tc.path, []byte(tc.body), tc.at)
		if !errors.Is(err, ErrRelaySecret) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestCheckRequestHostile: signature headers a stranger could send.
func TestCheckRequestHostile(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	good := SignRequest(testSecret, "POST", PathQueues, nil, now)
	exp, mac, _ := strings.Cut(good, " ")
	for _, h := range hostileAuth(exp, mac) {
		if err := CheckRequest(testSecret, h, "POST", PathQueues, nil, now); !errors.Is(err, ErrRelaySecret) {
			t.Errorf("%.60q: %v", h, err)
		}
	}
}

func hostileAuth(exp, mac string) []string {
	return []string{
		"",
		" ",
		exp,
		exp + " ",
		" " + mac,
		exp + "  " + mac,
		"-" + exp + " " + mac,
		"+" + exp + " " + mac,
		"0x10 " + mac,
		"99999999999999999999 " + mac,
		exp + " " + mac + "=",
		exp + " " + mac[:len(mac)-1],
		exp + " " + mac + "A",
		exp + " " + strings.Repeat("A", 4096),
		exp + " " + strings.ToUpper(mac),
		exp + "\x00 " + mac,
		exp + " " + mac + "\n",
		"0 " + mac,
	}
}

func FuzzCheckRequest(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	good := SignRequest(testSecret, "POST", PathQueues, []byte("x"), now)
	f.Add(good, "POST", PathQueues, []byte("x"))
	exp, mac, _ := strings.Cut(good, " ")
	for _, h := range hostileAuth(exp, mac) {
		f.Add(h, "POST", PathQueues, []byte("x"))
	}
	f.Fuzz(func(t *testing.T, h, method, path string, body []byte) {
		err := CheckRequest(testSecret, h, method, path, body, now)
		if err != nil && !errors.Is(err, ErrRelaySecret) {
			t.Fatalf("an error that is not ErrRelaySecret: %v", err)
		}
		if err == nil && SignRequest(testSecret, method, path, body, now) != h && !signedAt(h, method, path, body) {
			t.Fatalf("a forged signature passed: %q", h)
		}
	})
}

// signedAt reports whether h is SignRequest's for the request at some
// time (the fuzzer may find a real signature only by copying the seed).
func signedAt(h, method, path string, body []byte) bool {
	es, _, _ := strings.Cut(h, " ")
	exp, err := strconv.ParseInt(es, 10, 64)
	return err == nil && SignRequest(testSecret, method, path, body, time.Unix(exp, 0).Add(-signedFor)) == h
}

// TestCleanSecret: what a user may give as a relay secret.
func TestCleanSecret(t *testing.T) {
	t.Parallel()
	if s, err := CleanSecret("  " + testSecret + "\n"); err != nil || s != testSecret {
		t.Fatalf("a good secret with a newline: %q, %v", s, err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("x", 15), strings.Repeat("x", maxSecretLen+1), "sixteen chars\x00ok!", "two\nlines of a secret"} {
		if _, err := CleanSecret(bad); err == nil {
			t.Errorf("%.40q taken", bad)
		}
	}
}

// TestTURNCredentials: the TURN REST API's scheme, which coturn's
// use-auth-secret checks too: "EXPIRY:ferry", base64(HMAC-SHA1(secret,
// username)); the public ones without a secret.
func TestTURNCredentials(t *testing.T) {
	t.Parallel()
	if u, p := turnCredentials(""); u != TURNUser || p != TURNPassword {
		t.Fatalf("no secret: %q %q", u, p)
	}
	u, p := turnCredentials(testSecret)
	exp, name, ok := strings.Cut(u, ":")
	n, err := strconv.ParseInt(exp, 10, 64)
	if !ok || name != turnName || err != nil || time.Until(time.Unix(n, 0)) < CredentialTTL-time.Minute {
		t.Fatalf("username %q", u)
	}
	mac := hmac.New(sha1.New, []byte(testSecret))
	mac.Write([]byte(u))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); p != want {
		t.Errorf("password %q, want %q", p, want)
	}
	if p == "" || p == TURNPassword {
		t.Errorf("password %q", p)
	}
}
