package deviceid

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/peer"
)

func TestShort(t *testing.T) {
	for _, c := range []struct{ id, want string }{
		{"PT27TYCLZ5CQMQDBAAAA", "PT27-TYCL"},
		{"PT27TYCL", "PT27-TYCL"},
		{"PT27TYC", "PT27TYC"},
		{"", ""},
	} {
		if got := Short(c.id); got != c.want {
			t.Errorf("Short(%q) = %q, want %q", c.id, got, c.want)
		}
	}
}

// Every form a user may type or copy reads as the stored ID, so the short
// form that is shown is also taken back.
func TestCompactTakesEveryShownForm(t *testing.T) {
	for _, in := range []string{"PT27TYCL", "PT27-TYCL", "pt27-tycl", " PT27 TYCL ", Short("PT27TYCLZ5CQ")} {
		if got := Compact(in); got != "PT27TYCL" {
			t.Errorf("Compact(%q) = %q", in, got)
		}
	}
}

// The engine's peer.ID.Short, which may import nothing of the module,
// writes the same form.
func TestPeerShortIsTheSame(t *testing.T) {
	key := "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V733677KNSJLGUIGSQ"
	if got, want := (peer.ID{Kind: peer.Ferry, Key: key}).Short(), Short(key); got != want {
		t.Fatalf("peer.ID.Short %q, deviceid.Short %q", got, want)
	}
}

// key is a Ferry device ID as FerryKey writes it (it ends in Q: 10000).
const key = "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ"

// parseCases are typed, pasted and advertised spellings of IDs; want is
// the ID read, "" for a string that is none. They double as
// FuzzParseAsTheEngine's seeds.
var parseCases = []struct{ in, want string }{
	{key, key},
	{strings.ToLower(key), key},
	{"RACK-THZH-Y3KA-3RBZ-JYWI-MSSO-2CQL-TEOD-6V73-3677-5KNS-JLGU-IGSQ", key},
	{" RACK THZH Y3KA 3RBZ JYWI MSSO 2CQL TEOD 6V73 3677 5KNS JLGU IGSQ ", key},
	{strings.Repeat("A", Len), strings.Repeat("A", Len)},
	{"", ""},
	{key[:Len-1], ""},
	{key + "A", ""},
	{strings.Repeat("1", Len), ""},
	{key[:20] + "=" + key[21:], ""},
	// The last character holds one bit of the key and four no key sets:
	// each of these is key's hash read loosely, and none is its ID.
	{key[:Len-1] + "R", ""},
	{key[:Len-1] + "7", ""},
	{strings.ToLower(key[:Len-1]) + "z", ""},
	{"RACK-THZH-Y3KA-3RBZ-JYWI-MSSO-2CQL-TEOD-6V73-3677-5KNS-JLGU-IGSR", ""},
	{strings.Repeat("A", Len-1) + "P", ""},
	{strings.Repeat("A", Len-1) + "B", ""},
	// Not ASCII: folded to upper case these would read as key.
	{strings.Replace(strings.ToLower(key), "i", "ı", 1), ""},
	{strings.Replace(key, "S", "ſ", 1), ""},
	{strings.Replace(strings.ToLower(key), "k", "\u212a", 1), ""}, // the Kelvin sign
	{key[:20] + "\u00a0" + key[20:], ""},                          // a no-break space is not a space here
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		got, err := Parse(c.in)
		switch {
		case c.want == "" && (err == nil || !errors.Is(err, ErrNotAnID)):
			t.Errorf("Parse(%q) = %q, %v; want ErrNotAnID", c.in, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("Parse(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzParseAsTheEngine: Parse takes exactly the strings the engine's
// peer.ParseFerryKey takes, as the ID FerryKey writes for the key read, so
// a device shown from discovery and one typed in the app are one device
// with one ID.
func FuzzParseAsTheEngine(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		sum, perr := peer.ParseFerryKey(s)
		switch {
		case (err == nil) != (perr == nil):
			t.Fatalf("Parse(%q): %q, %v; peer.ParseFerryKey: %v", s, id, err, perr)
		case err == nil && id != peer.FerryKey(sum):
			t.Fatalf("Parse(%q) = %q, the engine reads %q", s, id, peer.FerryKey(sum))
		}
	})
}
