package pairing

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/identity"
)

func TestBothSidesAgree(t *testing.T) {
	t.Parallel()
	a, b := identity.DeviceID{1}, identity.DeviceID{2}
	nd, nl := NewNonce(), NewNonce()
	commitment := Commit(nd)
	got, err := CheckReveal(commitment, nd.String())
	if err != nil || got != nd {
		t.Fatalf("CheckReveal of the committed nonce: %v", err)
	}
	code := Code(a, b, nd, nl)
	if len(code) != Digits+1 || code[3] != ' ' {
		t.Fatalf("code %q", code)
	}
	if Code(a, b, got, nl) != code {
		t.Fatal("the two sides compute different codes")
	}
	// Any other key or nonce gives another code (with overwhelming odds).
	for _, other := range []string{Code(b, a, nd, nl), Code(a, identity.DeviceID{3}, nd, nl), Code(a, b, nl, nd), Code(a, b, nd, NewNonce())} {
		if other == code {
			t.Errorf("a different input gave the same code %s", code)
		}
	}
}

// revealCases test CheckReveal and seed its fuzzer (peer input).
var revealCases = []struct {
	name     string
	revealed string
	ok       bool
}{
	{"the committed nonce", Nonce{7}.String(), true},
	{"another nonce", Nonce{8}.String(), false},
	{"short", Nonce{7}.String()[:10], false},
	{"long", Nonce{7}.String() + "00", false},
	{"not hex", strings.Repeat("zz", NonceLen), false},
	{"upper case of the committed nonce", strings.ToUpper(Nonce{7}.String()), true},
	{"empty", "", false},
}

func TestCheckReveal(t *testing.T) {
	t.Parallel()
	commitment := Commit(Nonce{7})
	for _, c := range revealCases {
		_, err := CheckReveal(commitment, c.revealed)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadPairing) {
			t.Errorf("%s: %v is not ErrBadPairing", c.name, err)
		}
	}
}

func FuzzCheckReveal(f *testing.F) {
	commitment := Commit(Nonce{7})
	for _, c := range revealCases {
		f.Add(commitment, c.revealed)
	}
	f.Fuzz(func(t *testing.T, commitment, revealed string) {
		n, err := CheckReveal(commitment, revealed)
		if err != nil {
			if !errors.Is(err, ErrBadPairing) {
				t.Fatalf("error %v is not ErrBadPairing", err)
			}
			return
		}
		if Commit(n) != commitment {
			t.Fatalf("accepted %q for commitment %q", revealed, commitment)
		}
	})
}
