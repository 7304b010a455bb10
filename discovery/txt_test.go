package discovery

import (
	"errors"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

var goodID = strings.Repeat("A", IDLen)

// txtCases doubles as the seed corpus of FuzzParseTXT.
var txtCases = []struct {
	name string
	txt  []string
	ok   bool
	want txtInfo
}{
	{"full", []string{"v=1", "id=" + goodID, "q=4242", "t=4243", "os=linux", "n=Ana's laptop"}, true,
		txtInfo{Version: 1, ID: goodID, QUICPort: 4242, TCPPort: 4243, OS: "linux", Name: "Ana's laptop"}},
	{"lower case dashed id", []string{"v=1", "id=" + strings.ToLower(goodID[:4]) + "-" + goodID[4:], "q=1"}, true,
		txtInfo{Version: 1, ID: goodID, QUICPort: 1}},
	{"tcp only", []string{"v=1", "id=" + goodID, "t=80"}, true, txtInfo{Version: 1, ID: goodID, TCPPort: 80}},
	{"unknown keys and flags ignored", []string{"v=2", "x=y", "flag", "id=" + goodID, "q=1"}, true,
		txtInfo{Version: 2, ID: goodID, QUICPort: 1}},
	{"first duplicate wins", []string{"v=1", "id=" + goodID, "q=1", "q=2"}, true, txtInfo{Version: 1, ID: goodID, QUICPort: 1}},
	{"empty", nil, false, txtInfo{}},
	{"no id", []string{"v=1", "q=1"}, false, txtInfo{}},
	{"no version", []string{"id=" + goodID, "q=1"}, false, txtInfo{}},
	{"no port", []string{"v=1", "id=" + goodID}, false, txtInfo{}},
	{"short id", []string{"v=1", "id=ABCD", "q=1"}, false, txtInfo{}},
	{"id bad alphabet", []string{"v=1", "id=" + strings.Repeat("1", IDLen), "q=1"}, false, txtInfo{}},
	{"huge id", []string{"v=1", "id=" + strings.Repeat("A", 250), "q=1"}, false, txtInfo{}},
	{"port too big", []string{"v=1", "id=" + goodID, "q=65536"}, false, txtInfo{}},
	{"negative port", []string{"v=1", "id=" + goodID, "q=-1"}, false, txtInfo{}},
	{"plus port", []string{"v=1", "id=" + goodID, "q=+80"}, false, txtInfo{}},
	{"hex port", []string{"v=1", "id=" + goodID, "q=0x50"}, false, txtInfo{}},
	{"huge number", []string{"v=99999999999999999999", "id=" + goodID, "q=1"}, false, txtInfo{}},
	{"os injection", []string{"v=1", "id=" + goodID, "q=1", "os=linux; rm"}, false, txtInfo{}},
	{"name with control chars", []string{"v=1", "id=" + goodID, "q=1", "n=evil\x1b[2J"}, false, txtInfo{}},
	{"name with bidi override", []string{"v=1", "id=" + goodID, "q=1", "n=abc\u202egnp.exe"}, false, txtInfo{}},
	{"name invalid utf8", []string{"v=1", "id=" + goodID, "q=1", "n=\xff\xfe"}, false, txtInfo{}},
	{"name too long", []string{"v=1", "id=" + goodID, "q=1", "n=" + strings.Repeat("x", 64)}, false, txtInfo{}},
	{"too many strings", append([]string{"v=1", "id=" + goodID, "q=1"}, make([]string, 20)...), false, txtInfo{}},
	{"string too long", []string{"v=1", "id=" + goodID, "q=1", "x=" + strings.Repeat("y", 300)}, false, txtInfo{}},
	{"total too long", []string{"v=1", "id=" + goodID, "q=1", strings.Repeat("a", 250), strings.Repeat("b", 250),
		strings.Repeat("c", 250), strings.Repeat("d", 250), strings.Repeat("e", 250)}, false, txtInfo{}},
	{"empty key", []string{"=", "v=1", "id=" + goodID, "q=1"}, true, txtInfo{Version: 1, ID: goodID, QUICPort: 1}},
}

func TestParseTXT(t *testing.T) {
	for _, tc := range txtCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTXT(tc.txt)
			if tc.ok {
				if err != nil {
					t.Fatalf("parseTXT: %v", err)
				}
				if got != tc.want {
					t.Fatalf("parseTXT = %+v, want %+v", got, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrBadTXT) {
				t.Fatalf("parseTXT = %+v, %v; want ErrBadTXT", got, err)
			}
		})
	}
}

func TestBuildTXTRoundTrip(t *testing.T) {
	svc := Service{Name: "Desk", ID: goodID, QUICPort: 1000, TCPPort: 1001, OS: "darwin"}
	got, err := parseTXT(buildTXT(svc))
	if err != nil {
		t.Fatal(err)
	}
	want := txtInfo{Version: ProtocolVersion, ID: goodID, QUICPort: 1000, TCPPort: 1001, OS: "darwin", Name: "Desk"}
	if got != want {
		t.Fatalf("round trip = %+v, want %+v", got, want)
	}
}

// TestTXTSurvivesTheWire packs our TXT as zeroconf does and parses it as
// the browser does: names with non-ASCII letters, quotes and backslashes
// come back unchanged.
func TestTXTSurvivesTheWire(t *testing.T) {
	for _, name := range []string{"Desk", "Zoë's Mac", `back\slash "quoted"`, "日本語の名前"} {
		svc := Service{Name: name, ID: goodID, QUICPort: 1000, OS: "linux"}
		m := new(dns.Msg)
		m.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: "x.local.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 1}, Txt: buildTXT(svc)}}
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		var got dns.Msg
		if err := got.Unpack(b); err != nil {
			t.Fatal(err)
		}
		info, err := parseTXT(rawTXT(got.Answer[0].(*dns.TXT).Txt))
		if err != nil || info.Name != name {
			t.Errorf("%q came back as %q (%v)", name, info.Name, err)
		}
	}
}

func TestInstanceLabel(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"a.b\\c":                "a-b-c",
		"":                      "Ferry",
		"\x00\x01":              "Ferry",
		strings.Repeat("é", 40): strings.Repeat("é", 31),
		"tab\there\u202eevil":   "tabhereevil",
	} {
		if got := instanceLabel(in); got != want {
			t.Errorf("instanceLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseTXT feeds hostile TXT records: parseTXT must never panic, and
// whatever it accepts must be valid.
func FuzzParseTXT(f *testing.F) {
	for _, tc := range txtCases {
		f.Add(strings.Join(tc.txt, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		info, err := parseTXT(strings.Split(joined, "\x00"))
		if err != nil {
			return
		}
		if len(info.ID) != IDLen || !isBase32(info.ID) {
			t.Fatalf("accepted bad ID %q", info.ID)
		}
		if info.QUICPort < 0 || info.QUICPort > 65535 || info.TCPPort < 0 || info.TCPPort > 65535 || info.QUICPort+info.TCPPort == 0 {
			t.Fatalf("accepted bad ports %+v", info)
		}
		if len(info.Name) > MaxNameLen || len(info.OS) > maxOSLen {
			t.Fatalf("accepted oversized fields %+v", info)
		}
	})
}

// TestPresentationLabelMatchesQueries: zeroconf compares the names of
// incoming questions (unpacked by miekg/dns into presentation form) with
// its instance name as strings; registering the presentation form makes
// names with spaces and non-ASCII letters answerable.
func TestPresentationLabelMatchesQueries(t *testing.T) {
	for _, raw := range []string{"plain", "My Mac", "Zoë's (work) laptop", `semi;colon "q"`} {
		label := presentationLabel(instanceLabel(raw))
		q := new(dns.Msg)
		q.SetQuestion(label+"."+ServiceType+"."+Domain, dns.TypeSRV)
		b, err := q.Pack()
		if err != nil {
			t.Fatalf("%q: pack: %v", raw, err)
		}
		var got dns.Msg
		if err := got.Unpack(b); err != nil {
			t.Fatal(err)
		}
		if want := label + "." + ServiceType + "." + Domain; got.Question[0].Name != want {
			t.Errorf("%q: query arrives as %q, zeroconf compares with %q", raw, got.Question[0].Name, want)
		}
		if back := unescapeLabel(label); back != instanceLabel(raw) {
			t.Errorf("%q: unescapeLabel(%q) = %q", raw, label, back)
		}
	}
}
