package addr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNewAndParts(t *testing.T) {
	for _, tc := range []struct {
		a              Addr
		text, hp, host string
	}{
		{New(QUIC, "192.0.2.7:47800"), "quic://192.0.2.7:47800", "192.0.2.7:47800", "192.0.2.7"},
		{New(TCP, "[2001:db8::1]:51000"), "tcp://[2001:db8::1]:51000", "[2001:db8::1]:51000", "2001:db8::1"},
		{New(QUIC, "[fe80::1%eth0]:47800"), "quic://[fe80::1%eth0]:47800", "[fe80::1%eth0]:47800", "fe80::1%eth0"},
		{New(TCP, "desk.local:47800"), "tcp://desk.local:47800", "desk.local:47800", "desk.local"},
		{Addr{Kind: "localsend", URI: "https://192.0.2.9:53317/api?fp=ab12"}, "localsend+https://192.0.2.9:53317/api?fp=ab12", "192.0.2.9:53317", "192.0.2.9"},
		{NewLocalSend("https", "192.0.2.9:53317", "AB12"), "localsend+https://192.0.2.9:53317#AB12", "192.0.2.9:53317", "192.0.2.9"},
		{NewLocalSend("http", "[2001:db8::9]:53317", ""), "localsend+http://[2001:db8::9]:53317", "[2001:db8::9]:53317", "2001:db8::9"},
		{Addr{Kind: "rendezvous", URI: "rendezvous://anna-desk"}, "rendezvous://anna-desk", "anna-desk", "anna-desk"},
	} {
		if got := tc.a.String(); got != tc.text {
			t.Errorf("String() = %q, want %q", got, tc.text)
		}
		if got := tc.a.HostPort(); got != tc.hp {
			t.Errorf("%s: HostPort() = %q, want %q", tc.text, got, tc.hp)
		}
		if got := tc.a.Host(); got != tc.host {
			t.Errorf("%s: Host() = %q, want %q", tc.text, got, tc.host)
		}
		back, err := Parse(tc.text)
		if err != nil || back != tc.a {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.text, back, err, tc.a)
		}
	}
	if (Addr{}).String() != "" || !(Addr{}).IsZero() || New(QUIC, "h:1").IsZero() {
		t.Error("zero address")
	}
}

func TestLocalSendPin(t *testing.T) {
	a := NewLocalSend("ftp", "192.0.2.9:53317", "AB12")
	if a.Scheme() != "https" || a.Pin() != "AB12" || a.Kind.Label() != "LocalSend" {
		t.Errorf("%v: scheme %q pin %q label %q", a, a.Scheme(), a.Pin(), a.Kind.Label())
	}
	if p := New(QUIC, "192.0.2.9:1").Pin(); p != "" {
		t.Errorf("a QUIC address pins %q", p)
	}
	if p := NewLocalSend("http", "h:1", "").Pin(); p != "" {
		t.Errorf("no fingerprint, pin %q", p)
	}
}

// hostileAddrs are texts that are not addresses; they seed FuzzParse.
var hostileAddrs = []string{
	"",
	"192.0.2.7:47800", // no scheme: the CLI's HOST:PORT is read by the CLI, not here
	"://host:1",
	"quic://",
	"quic:///path",
	"QUIC://host:1",
	"qu ic://host:1",
	"quic://host name:1",
	"quic://host:1\n",
	"quic://ho\x00st:1",
	"+https://host:1",
	"localsend+://host:1",
	"a+b+c://host:1",
	strings.Repeat("k", maxKindLen+1) + "://host:1",
	"quic://" + strings.Repeat("a", MaxLen),
	"quic://user@",
	"\xff\xfe://host",
}

func TestParseRefuses(t *testing.T) {
	for _, s := range hostileAddrs {
		if a, err := Parse(s); !errors.Is(err, ErrBad) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrBad", s, a, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range hostileAddrs {
		f.Add(s)
	}
	f.Add("quic://192.0.2.7:47800")
	f.Add("localsend+https://192.0.2.9:53317/?fp=ab")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("Parse(%q): %v is not ErrBad", s, err)
			}
			return
		}
		if a.HostPort() == "" || a.Kind == "" {
			t.Fatalf("Parse(%q) = %+v without a host or kind", s, a)
		}
		back, err := Parse(a.String())
		if err != nil || back != a {
			t.Fatalf("Parse(%q) = %+v; its String %q reads back as %+v, %v", s, a, a.String(), back, err)
		}
	})
}

func TestJSON(t *testing.T) {
	in := []Addr{New(QUIC, "192.0.2.7:47800"), New(TCP, "192.0.2.7:47801")}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"kind":"quic","uri":"quic://192.0.2.7:47800"},{"kind":"tcp","uri":"tcp://192.0.2.7:47801"}]`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestLists(t *testing.T) {
	q, tc, q2 := New(QUIC, "a:1"), New(TCP, "a:1"), New(QUIC, "b:1")
	as := []Addr{q, tc, q2}
	if k := Kinds(as); len(k) != 2 || k[0] != QUIC || k[1] != TCP {
		t.Errorf("Kinds = %v", k)
	}
	if a, ok := First(as, TCP); !ok || a != tc {
		t.Errorf("First(TCP) = %v, %v", a, ok)
	}
	if _, ok := First(as, "localsend"); ok {
		t.Error("First found a kind that is not there")
	}
	if !Shared(as, []Addr{q2}) || Shared(as, []Addr{New(TCP, "b:1")}) {
		t.Error("Shared")
	}
	if QUIC.Label() != "QUIC" || TCP.Label() != "TCP" || Kind("x").Label() != "x" {
		t.Error("Label")
	}
}
