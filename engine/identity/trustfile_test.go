package identity

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/atomicfile"
)

const (
	trustKeyA = "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ"
	trustKeyB = "PT27TYCLPT27TYCLPT27TYCLPT27TYCLPT27TYCLPT27TYCLPT2A"
)

// hostileTrustFiles are trust.json files that are damaged or planted:
// each opens with the devices listed in keep, or is a *DamagedError
// (keep nil) that leaves the file as it was. They double as
// FuzzTrustFile's seeds.
var hostileTrustFiles = []struct {
	name, body string
	keep       []string
}{
	{"empty list", `[]`, []string{}},
	{"null", `null`, []string{}},
	{"two devices", `[{"id":"` + trustKeyA + `","name":"a","paired":true},{"id":"` + trustKeyB + `"}]`, []string{trustKeyA, trustKeyB}},
	{"empty", ``, nil},
	{"truncated", `[{"id":"` + trustKeyA + `","name":"a","paired":true},{"id":"` + trustKeyB, nil},
	{"not json", "\x00\xff", nil},
	{"an object", `{"id":"` + trustKeyA + `"}`, nil},
	{"more after the list", `[{"id":"` + trustKeyA + `"}] []`, nil},
	{"a number for the name", `[{"id":"` + trustKeyA + `","name":5}]`, nil},
	{"a word for the time", `[{"id":"` + trustKeyA + `","last_seen":"yesterday"}]`, nil},
	{"a string for a flag", `[{"id":"` + trustKeyA + `","paired":"yes"}]`, nil},
	{"a string for the addresses", `[{"id":"` + trustKeyA + `","last_addrs":"10.0.0.1:1"}]`, nil},
	{"a number for the ID", `[{"id":7}]`, nil},
	{"a list for a device", `[[1,2]]`, nil},
	{"a year past 9999", `[{"id":"` + trustKeyA + `","last_seen":"10000-01-01T00:00:00Z"}]`, nil},
	// Entries that are not devices this build can trust are left out,
	// alone (TestTrustStoreSkipsUnknownRecords).
	{"null for a device", `[null,{"id":"` + trustKeyA + `"}]`, []string{trustKeyA}},
	{"an ID that is not one", `[{"id":"nonsense"},{"id":"` + trustKeyA + `"}]`, []string{trustKeyA}},
	{"an ID with a dotless i", `[{"id":"` + strings.Replace(trustKeyA, "I", "ı", 1) + `","paired":true}]`, []string{}},
	{"an anonymous peer", `[{"id":"anon:10.0.0.1:1","always_accept":true}]`, []string{}},
	{"huge counts", `[{"id":"` + trustKeyA + `","first_seen":"0001-01-01T00:00:00Z","last_seen":"9999-12-31T23:59:59.999999999Z","last_addrs":["a","b","c","d","e","f"]}]`, []string{trustKeyA}},
	{"one device twice", `[{"id":"` + trustKeyA + `","name":"a"},{"id":"` + strings.ToLower(trustKeyA) + `","name":"b"}]`, []string{trustKeyA}},
}

func writeTrust(t testing.TB, dir string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, trustFile), body, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTrustFileHostile: a damaged trust.json is a *DamagedError that
// leaves it as it was (no device trusted is forgotten silently), and one
// that reads is written back as it read.
func TestTrustFileHostile(t *testing.T) {
	for _, tc := range hostileTrustFiles {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTrust(t, dir, []byte(tc.body))
			s, err := OpenStore(dir)
			if tc.keep == nil {
				var de *DamagedError
				if !errors.As(err, &de) || s != nil {
					t.Fatalf("opened as %v, %v; want a *DamagedError", s, err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, trustFile)); string(b) != tc.body {
					t.Fatalf("the damaged file was changed: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range s.List() {
				got = append(got, p.ID)
			}
			if len(got) != len(tc.keep) || !reflect.DeepEqual(sortedIDs(got), sortedIDs(tc.keep)) {
				t.Fatalf("opened with %v, want %v", got, tc.keep)
			}
			checkWrittenBack(t, dir, s)
		})
	}
}

func sortedIDs(ids []string) []string {
	out := append([]string{}, ids...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// checkWrittenBack writes s as a save would and checks that a store that
// reads the file has what s had (the same JSON: a value written escaped,
// "\u0026" for "&", is the same value).
func checkWrittenBack(t *testing.T, dir string, s *Store) {
	t.Helper()
	if err := s.write(s.byID, s.foreign); err != nil {
		t.Fatalf("what was read cannot be written back: %v", err)
	}
	again, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("what was written back does not read: %v", err)
	}
	if len(again.byID) != len(s.byID) || len(again.foreign) != len(s.foreign) {
		t.Fatalf("written back, %d devices and %d of kinds this build does not know read as %d and %d", len(s.byID), len(s.foreign), len(again.byID), len(again.foreign))
	}
	for id, p := range s.byID {
		was, _ := json.Marshal(p)
		is, _ := json.Marshal(again.byID[id])
		if !sameJSON(was, is) {
			t.Fatalf("the device %s was written back as %s", was, is)
		}
	}
	for i := range s.foreign {
		if !sameJSON(again.foreign[i], s.foreign[i]) {
			t.Fatalf("a device of a kind this build does not know, %s, was written back as %s", s.foreign[i], again.foreign[i])
		}
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// FuzzTrustFile reads arbitrary bytes as trust.json: a store opens, or a
// *DamagedError leaves the file as it was; an opened store holds every
// device of the file whose ID reads as one that proved a key, writes back
// and reads again as it was.
func FuzzTrustFile(f *testing.F) {
	for _, tc := range hostileTrustFiles {
		f.Add([]byte(tc.body))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		writeTrust(t, dir, data)
		s, err := OpenStore(dir)
		if err != nil {
			var de *DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("%v is not a *DamagedError", err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, trustFile)); !bytes.Equal(b, data) {
				t.Fatal("the damaged file was changed")
			}
			return
		}
		var entries []json.RawMessage
		json.Unmarshal(data, &entries)
		for _, e := range entries {
			var p struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(e, &p) != nil {
				continue
			}
			if id, err := peer.Parse(p.ID); err == nil && id.Proven() {
				if _, ok := s.byID[id.String()]; !ok {
					t.Fatalf("the device %s of %s was left out", id, e)
				}
			}
		}
		checkWrittenBack(t, dir, s)
	})
}

// A trust.json over maxTrustFile is damaged, not read whole into memory:
// it was read to its end whatever its size.
func TestTrustFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	writeTrust(t, dir, []byte("["+strings.Repeat(" ", maxTrustFile)+"]"))
	var de *DamagedError
	if s, err := OpenStore(dir); !errors.As(err, &de) || !errors.Is(err, atomicfile.ErrTooLarge) || s != nil {
		t.Fatalf("opened as %v, %v; want a *DamagedError", s, err)
	}
}

// TestTrustFileListingADeviceTwiceKeepsWhatEitherGranted: a trust.json
// that lists one device twice (here in two spellings of its ID, as a hand
// edit leaves it) opens with the device once, holding the trust either
// entry granted, and the log says what was not kept, in whichever order
// the entries come. The later entry replaced the earlier one before, and
// the pairing of the earlier was lost without a word.
func TestTrustFileListingADeviceTwiceKeepsWhatEitherGranted(t *testing.T) {
	paired := `{"id":"` + trustKeyA + `","name":"Old desk","first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-03-01T00:00:00Z",` +
		`"last_addrs":["10.0.0.1:47800"],"always_accept":true,"paired":true,"paired_at":"2026-02-01T00:00:00Z",` +
		`"rendezvous":"aa","rendezvous_at":"2026-02-01T00:00:00Z","future":1}`
	seen := `{"id":"` + strings.ToLower(trustKeyA) + `","name":"Desk","first_seen":"2026-04-01T00:00:00Z","last_seen":"2026-05-01T00:00:00Z",` +
		`"last_addrs":["10.0.0.2:47800","10.0.0.1:47800"],"always_accept":false,"future":2,"newer":true}`
	for _, body := range []string{"[" + paired + "," + seen + "]", "[" + seen + "," + paired + "]"} {
		dir := t.TempDir()
		writeTrust(t, dir, []byte(body))
		var logged bytes.Buffer
		s, err := OpenStoreWith(dir, nil, slog.New(slog.NewTextHandler(&logged, nil)))
		if err != nil {
			t.Fatal(err)
		}
		l := s.List()
		if len(l) != 1 {
			t.Fatalf("%s opened as %+v", body, l)
		}
		p := l[0]
		day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
		if !p.Paired || !p.AlwaysAccept || !p.PairedAt.Equal(day("2026-02-01")) || p.Rendezvous != "aa" ||
			p.Name != "Desk" || !p.FirstSeen.Equal(day("2026-01-01")) || !p.LastSeen.Equal(day("2026-05-01")) ||
			!slices.Equal(p.LastAddrs, []string{"10.0.0.2:47800", "10.0.0.1:47800"}) ||
			string(p.unknown["future"]) != "2" || string(p.unknown["newer"]) != "true" {
			t.Errorf("%s opened as %+v", body, p)
		}
		for _, w := range []string{"listed twice", "device=RACK-THZH", `entries="1 and 2"`, "paired=true", `the name \"Old desk\"`, `the field \"future\"`} {
			if !strings.Contains(logged.String(), w) {
				t.Errorf("the log does not say %s: %s", w, logged.String())
			}
		}
		checkWrittenBack(t, dir, s)
	}
}

// TestTrustFileSaysWhatItLeavesOut: an entry of trust.json whose ID names
// no device (here a Ferry key with bits set that no key has, which
// ParseFerryKey refuses since it read it as another string's key) is left
// out, and the log says which; it was left out without a word.
func TestTrustFileSaysWhatItLeavesOut(t *testing.T) {
	dir := t.TempDir()
	odd := trustKeyA[:51] + "R"
	writeTrust(t, dir, []byte(`[{"id":"`+trustKeyB+`"},{"id":"`+odd+`","paired":true}]`))
	var logged bytes.Buffer
	s, err := OpenStoreWith(dir, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if l := s.List(); len(l) != 1 || l[0].ID != trustKeyB {
		t.Fatalf("opened as %+v", l)
	}
	for _, w := range []string{"left out", "entry=2", odd} {
		if !strings.Contains(logged.String(), w) {
			t.Errorf("the log does not say %s: %s", w, logged.String())
		}
	}
}
