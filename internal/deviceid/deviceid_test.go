package deviceid

import (
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
