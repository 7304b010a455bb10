package discovery

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"github.com/miekg/dns"
)

var goodID = strings.Repeat("A", IDLen)

// keyID is a device ID as Ferry writes it from a key (its last
// character's four unused bits clear: it ends in Q), with an I and an S.
const keyID = "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ"

// isID reports whether s is a device ID in the one form it is kept and
// shown in (deviceid.Parse's).
func isID(s string) bool {
	id, err := deviceid.Parse(s)
	return err == nil && id == s
}

// ports are the Ports of a record with these QUIC and TCP ports (0: none).
func ports(quic, tcp int) []Port {
	var out []Port
	if quic > 0 {
		out = append(out, Port{Kind: addr.QUIC, Port: quic})
	}
	if tcp > 0 {
		out = append(out, Port{Kind: addr.TCP, Port: tcp})
	}
	return out
}

// listeners are an engine's listening addresses with these QUIC and TCP
// ports (0: not listening), as Engine.Addrs gives them.
func listeners(quic, tcp int) []addr.Addr {
	var out []addr.Addr
	if quic > 0 {
		out = append(out, addr.New(addr.QUIC, "[::]:"+strconv.Itoa(quic)))
	}
	if tcp > 0 {
		out = append(out, addr.New(addr.TCP, "[::]:"+strconv.Itoa(tcp)))
	}
	return out
}

func txtKey(kind addr.Kind) string {
	for _, p := range txtPorts {
		if p.kind == kind {
			return p.key
		}
	}
	return ""
}

// txtCases doubles as the seed corpus of FuzzParseTXT.
var txtCases = []struct {
	name string
	txt  []string
	ok   bool
	want txtInfo
}{
	{"full", []string{"v=1", "id=" + goodID, "q=4242", "t=4243", "os=linux", "n=Ana's laptop"}, true,
		txtInfo{Version: 1, ID: goodID, Ports: ports(4242, 4243), OS: "linux", Name: "Ana's laptop"}},
	{"lower case dashed id", []string{"v=1", "id=" + strings.ToLower(goodID[:4]) + "-" + goodID[4:], "q=1"}, true,
		txtInfo{Version: 1, ID: goodID, Ports: ports(1, 0)}},
	{"tcp only", []string{"v=1", "id=" + goodID, "t=80"}, true, txtInfo{Version: 1, ID: goodID, Ports: ports(0, 80)}},
	{"unknown keys and flags ignored", []string{"v=2", "x=y", "flag", "id=" + goodID, "q=1"}, true,
		txtInfo{Version: 2, ID: goodID, Ports: ports(1, 0)}},
	{"first duplicate wins", []string{"v=1", "id=" + goodID, "q=1", "q=2"}, true, txtInfo{Version: 1, ID: goodID, Ports: ports(1, 0)}},
	{"empty", nil, false, txtInfo{}},
	{"no id", []string{"v=1", "q=1"}, false, txtInfo{}},
	{"no version", []string{"id=" + goodID, "q=1"}, false, txtInfo{}},
	{"no port", []string{"v=1", "id=" + goodID}, false, txtInfo{}},
	{"zero ports", []string{"v=1", "id=" + goodID, "q=0", "t=0"}, false, txtInfo{}},
	{"ports in any order", []string{"v=1", "id=" + goodID, "t=2", "q=1"}, true, txtInfo{Version: 1, ID: goodID, Ports: ports(1, 2)}},
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
	{"empty key", []string{"=", "v=1", "id=" + goodID, "q=1"}, true, txtInfo{Version: 1, ID: goodID, Ports: ports(1, 0)}},
	{"id of a key", []string{"v=1", "id=" + keyID, "q=1"}, true, txtInfo{Version: 1, ID: keyID, Ports: ports(1, 0)}},
	// Another spelling of keyID is not taken: the device would be listed
	// under two IDs, one from mDNS and one typed.
	{"id with unused bits set", []string{"v=1", "id=" + keyID[:IDLen-1] + "R", "q=1"}, false, txtInfo{}},
	{"id with unused bits set, lower case", []string{"v=1", "id=" + strings.ToLower(keyID[:IDLen-1]) + "7", "q=1"}, false, txtInfo{}},
	{"dashed id with unused bits set", []string{"v=1", "id=RACK-THZH-Y3KA-3RBZ-JYWI-MSSO-2CQL-TEOD-6V73-3677-5KNS-JLGU-IGSR", "q=1"}, false, txtInfo{}},
	{"id of As ending in B", []string{"v=1", "id=" + goodID[:IDLen-1] + "B", "q=1"}, false, txtInfo{}},
	{"id with a dotless i", []string{"v=1", "id=" + strings.Replace(strings.ToLower(keyID), "i", "ı", 1), "q=1"}, false, txtInfo{}},
	{"id with a long s", []string{"v=1", "id=" + strings.Replace(keyID, "S", "ſ", 1), "q=1"}, false, txtInfo{}},
}

func TestParseTXT(t *testing.T) {
	for _, tc := range txtCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTXT(tc.txt)
			if tc.ok {
				if err != nil {
					t.Fatalf("parseTXT: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
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
	svc := Service{Name: "Desk", ID: goodID, Addrs: listeners(1000, 1001), OS: "darwin"}
	got, err := parseTXT(buildTXT(svc))
	if err != nil {
		t.Fatal(err)
	}
	want := txtInfo{Version: ProtocolVersion, ID: goodID, Ports: ports(1000, 1001), OS: "darwin", Name: "Desk"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip = %+v, want %+v", got, want)
	}
}

// TestTXTSurvivesTheWire packs our TXT as zeroconf does and parses it as
// the browser does: names with non-ASCII letters, quotes and backslashes
// come back unchanged.
func TestTXTSurvivesTheWire(t *testing.T) {
	for _, name := range []string{"Desk", "Zoë's Mac", `back\slash "quoted"`, "日本語の名前"} {
		svc := Service{Name: name, ID: goodID, Addrs: listeners(1000, 0), OS: "linux"}
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
		if !isID(info.ID) {
			t.Fatalf("accepted bad ID %q", info.ID)
		}
		if len(info.Ports) == 0 || len(info.Ports) > len(txtPorts) {
			t.Fatalf("accepted bad ports %+v", info)
		}
		for _, p := range info.Ports {
			if p.Port <= 0 || p.Port > 65535 || txtPortKind(txtKey(p.Kind)) != p.Kind {
				t.Fatalf("accepted bad ports %+v", info)
			}
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

// testdata/txt-v1.tsv holds TXT records as main wrote them before
// addresses had kinds (one record a line, strings tab-separated). The
// records built now are the same bytes, so every Ferry out there reads
// them as before; and today's records read back with the same ports.
func TestTXTAsMainWroteIt(t *testing.T) {
	data, err := os.ReadFile("testdata/txt-v1.tsv")
	if err != nil {
		t.Fatal(err)
	}
	id := "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRSQ"
	for i, tc := range []struct {
		svc       Service
		quic, tcp int
	}{
		{Service{Name: "Desk", ID: id, Addrs: listeners(47800, 47800), OS: "linux"}, 47800, 47800},
		{Service{Name: "Anna's laptop", ID: id, Addrs: listeners(47800, 51234), OS: "darwin"}, 47800, 51234},
		{Service{Name: "quic only", ID: id, Addrs: listeners(47800, 0), OS: "windows"}, 47800, 0},
		{Service{Name: "tcp only", ID: id, Addrs: listeners(0, 47801), OS: "linux"}, 0, 47801},
		{Service{ID: id, Addrs: listeners(1, 65535), OS: "freebsd"}, 1, 65535},
	} {
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) != 5 {
			t.Fatalf("%d records in the file", len(lines))
		}
		old := strings.Split(lines[i], "\t")
		if got := buildTXT(tc.svc); !reflect.DeepEqual(got, old) {
			t.Errorf("record %d: built %q, main wrote %q", i, got, old)
		}
		info, err := parseTXT(old)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want := ports(tc.quic, tc.tcp); !reflect.DeepEqual(info.Ports, want) {
			t.Errorf("record %d: ports %v, want %v", i, info.Ports, want)
		}
		want := tc.quic // the SRV record points at QUIC's port, else TCP's
		if want == 0 {
			want = tc.tcp
		}
		if srv := tc.svc.srvPort(); srv != want {
			t.Errorf("record %d: SRV port %d, want %d", i, srv, want)
		}
	}
}
