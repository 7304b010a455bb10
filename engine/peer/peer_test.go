package peer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	ferryKey = "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ"
	lsKey    = "8C3F2B5A0D1E4F6A7B8C9D0E1F2A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4C"
)

// parseCases double as the fuzz seeds: what a peer, a flag or a file may
// hand Parse, good and hostile.
var parseCases = []struct {
	in   string
	want ID // zero: an error
}{
	{ferryKey, ID{Ferry, ferryKey}},
	{strings.ToLower(ferryKey), ID{Ferry, ferryKey}},
	{"RACK-THZH-Y3KA-3RBZ-JYWI-MSSO-2CQL-TEOD-6V73-3677-5KNS-JLGU-IGSQ", ID{Ferry, ferryKey}},
	{"ferry:" + ferryKey, ID{Ferry, ferryKey}},
	{"FERRY:" + ferryKey, ID{Ferry, ferryKey}},
	{"  " + ferryKey + "\n", ID{Ferry, ferryKey}},
	{"localsend:" + lsKey, ID{LocalSend, lsKey}},
	{"localsend:" + strings.ToLower(lsKey), ID{LocalSend, lsKey}},
	{"anon:192.0.2.7:53317", ID{Anon, "192.0.2.7:53317"}},
	{"anon:[fe80::1%eth0]:80", ID{Anon, "[fe80::1%eth0]:80"}},
	{"", ID{}},
	{":", ID{}},
	{"ferry:", ID{}},
	{"anon:", ID{}},
	{"anon:" + strings.Repeat("x", 300), ID{}},
	{"localsend:", ID{}},
	{"localsend:" + lsKey[:63], ID{}},
	{"localsend:" + lsKey[:62] + "ZZ", ID{}},
	{"localsend:" + ferryKey, ID{}},
	{"ferry:" + lsKey, ID{}},
	{ferryKey[:51], ID{}},
	{ferryKey + "A", ID{}},
	{strings.Repeat("1", 52), ID{}}, // not base32
	{"192.0.2.7:47800", ID{}},       // an address is not an ID
	{"bluetooth:" + ferryKey, ID{}},
	{"\x00:\xff", ID{}},
	// Folding case makes these ASCII: "ı" (dotless i) an I, "ſ" (long s)
	// an S, "K" (the Kelvin sign) a k, "İ" an i. None is a key.
	{strings.Replace(ferryKey, "I", "ı", 1), ID{}},
	{strings.Replace(ferryKey, "S", "ſ", 1), ID{}},
	{strings.Replace(strings.ToLower(ferryKey), "k", "\u212a", 1), ID{}},
	{strings.Replace(strings.ToLower(ferryKey), "i", "İ", 1), ID{}},
	{"ferry:" + strings.Replace(ferryKey, "S", "ſ", 1), ID{}},
	{ferryKey[:20] + "\u00a0" + ferryKey[20:], ID{}}, // a no-break space is not a space here
	// The last character holds one bit of the key and four unused ones,
	// which the decoder ignores: each of these decodes to ferryKey's 32
	// bytes (ferryKey ends in Q, 10000), and none is how it is written.
	{ferryKey[:51] + "R", ID{}},
	{ferryKey[:51] + "7", ID{}},
	{strings.ToLower(ferryKey[:51]) + "z", ID{}},
	{"ferry:" + ferryKey[:51] + "Y", ID{}},
	{"RACK-THZH-Y3KA-3RBZ-JYWI-MSSO-2CQL-TEOD-6V73-3677-5KNS-JLGU-IGSR", ID{}},
	{strings.Repeat("A", 51) + "A", ID{Ferry, strings.Repeat("A", 52)}},
	{strings.Repeat("A", 51) + "P", ID{}}, // 01111: the key bit clear, the rest set
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		got, err := Parse(c.in)
		if c.want.IsZero() {
			if err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", c.in, got)
			} else if !errors.Is(err, ErrBadID) {
				t.Errorf("Parse(%q): %v is not ErrBadID", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// A Ferry ID is written bare, as trust.json, history and resume state have
// always held it; the other kinds carry their kind, so no two collide.
func TestStringKeepsFerryIDsBare(t *testing.T) {
	for _, c := range []struct {
		id   ID
		want string
	}{
		{ID{Ferry, ferryKey}, ferryKey},
		{ID{LocalSend, lsKey}, "localsend:" + lsKey},
		{Anonymous("192.0.2.7:1"), "anon:192.0.2.7:1"},
		{ID{}, ""},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.id, got, c.want)
		}
	}
}

// The same 32 bytes as a Ferry key and as (half) a fingerprint, or an
// anonymous peer named like a key, are different peers.
func TestKindsNeverCollide(t *testing.T) {
	ids := []ID{{Ferry, ferryKey}, {LocalSend, lsKey}, Anonymous(ferryKey), Anonymous("localsend:" + lsKey)}
	seen := map[string]ID{}
	for _, id := range ids {
		s := id.String()
		if other, dup := seen[s]; dup {
			t.Fatalf("%+v and %+v are both written %q", id, other, s)
		}
		seen[s] = id
		back, err := Parse(s)
		if err != nil || back != id {
			t.Fatalf("Parse(%q) = %+v, %v; want %+v", s, back, err, id)
		}
	}
}

func TestProven(t *testing.T) {
	if !(ID{Ferry, ferryKey}).Proven() || !(ID{LocalSend, lsKey}).Proven() {
		t.Error("a peer that proved its key is not Proven")
	}
	if Anonymous("192.0.2.7:1").Proven() || (ID{}).Proven() {
		t.Error("a peer that proved nothing is Proven")
	}
}

func TestFromCertificateIsTheLocalSendFingerprint(t *testing.T) {
	// LocalSend's fingerprint is the upper-case hex SHA-256 of the DER.
	id := FromCertificate([]byte("abc"))
	const want = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
	if id != (ID{LocalSend, want}) {
		t.Fatalf("FromCertificate = %+v", id)
	}
	if fp, err := Fingerprint(strings.ToLower(want)); err != nil || fp != id {
		t.Fatalf("Fingerprint of the same, lower-case: %+v %v", fp, err)
	}
}

func TestJSON(t *testing.T) {
	type rec struct {
		ID ID `json:"id"`
	}
	for _, id := range []ID{{Ferry, ferryKey}, {LocalSend, lsKey}, Anonymous("h:1"), {}} {
		b, err := json.Marshal(rec{id})
		if err != nil {
			t.Fatal(err)
		}
		var back rec
		if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
			t.Fatalf("%s: %+v %v", b, back.ID, err)
		}
	}
	var r rec
	if err := json.Unmarshal([]byte(`{"id":"nonsense"}`), &r); err == nil {
		t.Fatal("a bad ID decoded")
	}
}

func TestHumanAndShort(t *testing.T) {
	id := ID{Ferry, ferryKey}
	if id.Short() != "RACK-THZH" || !strings.HasPrefix(id.Human(), "RACK-THZH-") {
		t.Fatalf("%q %q", id.Short(), id.Human())
	}
	if a := Anonymous("192.0.2.7:1"); a.Short() != "192.0.2.7:1" || a.Human() != "192.0.2.7:1" {
		t.Fatalf("anonymous: %q %q", a.Short(), a.Human())
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			return
		}
		if id.IsZero() {
			t.Fatalf("Parse(%q) gave the zero ID without an error", s)
		}
		again, err := Parse(id.String())
		if err != nil || again != id {
			t.Fatalf("Parse(%q) = %+v, but its String %q parses to %+v, %v", s, id, id.String(), again, err)
		}
	})
}

// FuzzParseFerryKey: a key is read only from ASCII, and only from the
// string FerryKey writes for it (dashes, spaces and case aside: a parsed
// key prints back as the string it was read from, folded to upper case; the
// last character's four unused bits are never set), and what FerryKey
// writes reads back as the same key.
func FuzzParseFerryKey(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sum, err := ParseFerryKey(s)
		if err != nil {
			if !errors.Is(err, ErrBadID) {
				t.Fatalf("ParseFerryKey(%q): %v is not ErrBadID", s, err)
			}
			return
		}
		for _, r := range s {
			if r >= utf8.RuneSelf {
				t.Fatalf("ParseFerryKey(%q) read a key from a string that is not ASCII", s)
			}
		}
		key := FerryKey(sum)
		if bare := strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s))); bare != key {
			t.Fatalf("ParseFerryKey(%q) read the key written %q", s, key)
		}
		if again, err := ParseFerryKey(key); err != nil || again != sum {
			t.Fatalf("ParseFerryKey(FerryKey(%x)) = %x, %v", sum, again, err)
		}
	})
}
