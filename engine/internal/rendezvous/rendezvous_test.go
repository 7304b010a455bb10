package rendezvous

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
)

func ids() (a, b identity.DeviceID) {
	for i := range a {
		a[i], b[i] = byte(i), byte(100+i)
	}
	return a, b
}

func nonce(v byte) []byte { return bytes.Repeat([]byte{v}, 32) }

// TestDerive: both sides of an exchange derive the same secret; any other
// ID, nonce or role order gives another one.
func TestDerive(t *testing.T) {
	a, b := ids()
	s := Derive(a, b, nonce(1), nonce(2))
	if s != Derive(a, b, nonce(1), nonce(2)) {
		t.Fatal("the same exchange derived two secrets")
	}
	if s.IsZero() {
		t.Fatal("a derived secret is zero")
	}
	for name, other := range map[string]Secret{
		"roles swapped":     Derive(b, a, nonce(1), nonce(2)),
		"nonces swapped":    Derive(a, b, nonce(2), nonce(1)),
		"another nonce":     Derive(a, b, nonce(1), nonce(3)),
		"another device":    Derive(a, a, nonce(1), nonce(2)),
		"no listener nonce": Derive(a, b, nonce(1), nil),
	} {
		if other == s {
			t.Errorf("%s: same secret", name)
		}
	}
}

// TestNames: a name is stable within a period, changes at the boundary,
// differs per publisher and per secret, and never shows the device ID.
func TestNames(t *testing.T) {
	a, b := ids()
	s := Derive(a, b, nonce(1), nonce(2))
	t0 := time.Unix(1_800_000_000, 0).Truncate(Period)
	n := Name(s, a, t0)
	if len(n) != 32 {
		t.Fatalf("name %q: want 32 hex digits", n)
	}
	if Name(s, a, t0.Add(Period-time.Second)) != n {
		t.Error("the name changed within a period")
	}
	next := Name(s, a, t0.Add(Period))
	if next == n {
		t.Error("the name did not rotate at the period's end")
	}
	if Name(s, b, t0) == n {
		t.Error("two publishers share a name")
	}
	if Name(Derive(a, b, nonce(1), nonce(3)), a, t0) == n {
		t.Error("two secrets give one name")
	}
	for _, id := range []identity.DeviceID{a, b} {
		if strings.Contains(n, hex.EncodeToString(id[:4])) || strings.Contains(n, id.String()[:8]) {
			t.Errorf("name %q shows device ID %s", n, id)
		}
	}
	got := Names(s, a, t0.Add(Period))
	if len(got) != 3 || got[0] != next || got[1] != n || got[2] != Name(s, a, t0.Add(2*Period)) {
		t.Errorf("Names = %v, want the current, previous and next period's", got)
	}
}

// TestParse: a secret's hex form reads back; hostile values are refused.
func TestParse(t *testing.T) {
	a, b := ids()
	s := Derive(a, b, nonce(1), nonce(2))
	got, err := Parse(s.String())
	if err != nil || got != s {
		t.Fatalf("Parse(String()) = %v, %v", got, err)
	}
	if z, err := Parse(""); err != nil || !z.IsZero() {
		t.Errorf(`Parse("") = %v, %v; want the zero secret`, z, err)
	}
	for _, bad := range parseCases {
		if _, err := Parse(bad); !errors.Is(err, ErrBadSecret) {
			t.Errorf("Parse(%q) = %v, want ErrBadSecret", bad, err)
		}
	}
}

var parseCases = []string{
	"00",
	strings.Repeat("0", 63),
	strings.Repeat("0", 65),
	strings.Repeat("g", 64),
	strings.Repeat("é", 32),
	strings.Repeat("0", 62) + "\x00\x00",
}

// TestFingerprint: the fingerprint tells secrets apart without showing
// them; hostile fingerprints from a peer are refused.
func TestFingerprint(t *testing.T) {
	a, b := ids()
	s1, s2 := Derive(a, b, nonce(1), nonce(2)), Derive(a, b, nonce(1), nonce(3))
	f1, f2 := s1.Fingerprint(), s2.Fingerprint()
	if f1 == f2 || len(f1) != FingerprintLen || CheckFingerprint(f1) != nil {
		t.Fatalf("fingerprints %q, %q", f1, f2)
	}
	if strings.Contains(s1.String(), f1) {
		t.Error("the fingerprint is a piece of the secret")
	}
	if (Secret{}).Fingerprint() != "" {
		t.Error("the zero secret has a fingerprint")
	}
	if !SameFingerprint(f1, s1.Fingerprint()) || SameFingerprint(f1, f2) || SameFingerprint("", "") {
		t.Error("SameFingerprint")
	}
	for _, bad := range fingerprintCases {
		if err := CheckFingerprint(bad); !errors.Is(err, ErrBadSecret) {
			t.Errorf("CheckFingerprint(%q) = %v, want ErrBadSecret", bad, err)
		}
	}
}

var fingerprintCases = []string{
	"0",
	strings.Repeat("a", FingerprintLen+1),
	strings.Repeat("A", FingerprintLen),
	strings.Repeat("z", FingerprintLen),
	strings.Repeat("\x00", FingerprintLen),
	strings.Repeat("é", FingerprintLen/2),
}

// FuzzParse: no input panics; what parses prints back the same.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c)
	}
	for _, c := range fingerprintCases {
		f.Add(c)
	}
	f.Add(strings.Repeat("ab", 32))
	f.Fuzz(func(t *testing.T, v string) {
		if s, err := Parse(v); err == nil && v != "" && s.String() != strings.ToLower(v) {
			t.Fatalf("Parse(%q).String() = %q", v, s.String())
		}
		if CheckFingerprint(v) == nil && v != "" && len(v) != FingerprintLen {
			t.Fatalf("CheckFingerprint(%q) accepted a wrong length", v)
		}
	})
}
