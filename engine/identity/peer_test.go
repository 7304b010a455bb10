package identity

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/peer"
)

// A Ferry device and a LocalSend device are remembered side by side, each
// trusted, renamed and forgotten on its own; a peer that proved no key is
// never remembered.
func TestTrustStoreKeepsKindsApart(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := LoadOrCreate(t.TempDir())
	ferry := a.ID.Peer()
	// The LocalSend ID of the very same certificate is another peer.
	ls := peer.FromCertificate(a.Cert.Leaf.Raw)
	if err := s.Seen(ferry, "desk", "10.0.0.5:47800"); err != nil {
		t.Fatal(err)
	}
	if err := s.Seen(ls, "phone", "10.0.0.5:53317"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlwaysAccept(ls, "", true); err != nil {
		t.Fatal(err)
	}
	anon := peer.Anonymous("10.0.0.9:40000")
	for name, err := range map[string]error{
		"Seen":            s.Seen(anon, "browser", ""),
		"SetAlwaysAccept": s.SetAlwaysAccept(anon, "browser", true),
		"Pair":            s.Pair(anon, "browser", "", time.Now()),
	} {
		if !errors.Is(err, ErrNotProven) {
			t.Errorf("%s of an anonymous peer: %v, want ErrNotProven", name, err)
		}
	}
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	fp, ok1 := s2.Get(ferry)
	lp, ok2 := s2.Get(ls)
	if !ok1 || !ok2 || fp.Name != "desk" || lp.Name != "phone" || fp.AlwaysAccept || !lp.AlwaysAccept {
		t.Fatalf("reloaded: %+v %v / %+v %v", fp, ok1, lp, ok2)
	}
	if lp.ID != "localsend:"+ls.Key || fp.ID != a.ID.String() {
		t.Fatalf("stored IDs %q, %q", fp.ID, lp.ID)
	}
	if _, ok := s2.Get(anon); ok || len(s2.List()) != 2 {
		t.Fatalf("the store holds %+v", s2.List())
	}
	// A LocalSend device at a Ferry device's last address is not "the
	// Ferry device with a new key": the kinds do not compare.
	b, _ := LoadOrCreate(t.TempDir())
	if err := s2.CheckAddr("10.0.0.5:47800", peer.FromCertificate(b.Cert.Leaf.Raw)); err != nil {
		t.Errorf("a LocalSend key at a Ferry device's address: %v", err)
	}
	var kc *KeyChangedError
	if err := s2.CheckAddr("10.0.0.5:47800", b.ID.Peer()); !errors.As(err, &kc) || kc.Presented != b.ID.Peer() {
		t.Errorf("another Ferry key at a Ferry device's address: %v", err)
	}
	if err := s2.Forget(ls); err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Get(ls); ok {
		t.Fatal("forgotten LocalSend device still known")
	}
	if _, ok := s2.Get(ferry); !ok {
		t.Fatal("forgetting the LocalSend device forgot the Ferry one")
	}
}

// A trust store with records this version cannot read (an unknown kind, a
// damaged ID, an anonymous peer) loads the others.
func TestTrustStoreSkipsUnknownRecords(t *testing.T) {
	dir := t.TempDir()
	a, _ := LoadOrCreate(t.TempDir())
	data := `[{"id":"` + a.ID.String() + `","name":"desk"},
	{"id":"bluetooth:AA","name":"x"},{"id":"anon:10.0.0.1:1","name":"y","always_accept":true},{"id":"nonsense"},
	{"id":"localsend:` + peer.FromCertificate([]byte("c")).Key + `","name":"phone"}]`
	if err := os.WriteFile(filepath.Join(dir, trustFile), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.List(); len(l) != 2 {
		t.Fatalf("loaded %+v", l)
	}
}

// TestTrustStoreKeepsWhatANewerFerryWrote: trust.json as a newer Ferry
// wrote it, with fields and a kind of device this build does not know
// (the user went back to this version), keeps them through this build's
// writes, so that going forward again loses nothing. Ferry of 2026-12-02
// rewrote a current trust.json without its paired devices' rendezvous
// secrets (ferry-cli send of that build to a paired device), and every
// build so far dropped the devices of a kind it did not know at its next
// write (docs/compatibility.md).
func TestTrustStoreKeepsWhatANewerFerryWrote(t *testing.T) {
	dir := t.TempDir()
	a, _ := LoadOrCreate(t.TempDir())
	data := `[{"id":"` + a.ID.String() + `","name":"desk","paired":true,"future_key":{"v":2,"k":"abc"},"future_flag":true},
	{"id":"bluetooth:AA","name":"headset","last_seen":"2026-12-05T10:00:00Z"},{"id":"nonsense"},null]`
	if err := os.WriteFile(filepath.Join(dir, trustFile), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlwaysAccept(a.ID.Peer(), "desk", true); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(dir, trustFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(saved, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("saved %d devices, want desk and the headset: %s", len(got), saved)
	}
	desk, headset := got[0], got[1]
	if desk["always_accept"] != true || desk["paired"] != true || desk["future_flag"] != true {
		t.Errorf("desk saved as %v", desk)
	}
	if k, _ := desk["future_key"].(map[string]any); k["v"] != 2.0 || k["k"] != "abc" {
		t.Errorf("desk's future_key saved as %v", desk["future_key"])
	}
	if headset["id"] != "bluetooth:AA" || headset["name"] != "headset" || headset["last_seen"] != "2026-12-05T10:00:00Z" {
		t.Errorf("the device of an unknown kind saved as %v", headset)
	}
	if l := s.List(); len(l) != 1 || l[0].Name != "desk" {
		t.Errorf("listed %+v", l)
	}
	// And once more, through a store that reads the file this one wrote.
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Forget(a.ID.Peer()); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, trustFile))
	if !strings.Contains(string(again), `"bluetooth:AA"`) || strings.Contains(string(again), "future_key") {
		t.Errorf("after forgetting desk: %s", again)
	}
}

// trust.json as written before peers had kinds (Ferry IDs bare) loads as
// Ferry devices, and saving it writes them the same way.
func TestLegacyTrustStoreLoads(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "testdata", "legacy-config", "receiver", trustFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, trustFile), src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.Parse("RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.Get(id)
	if !ok || !p.Paired || !p.AlwaysAccept || p.Name != "legacy-sender" {
		t.Fatalf("legacy record: %+v %v", p, ok)
	}
	if err := s.Seen(id, "", ""); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(dir, trustFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(again), id.Key); n != 1 || strings.Contains(string(again), "ferry:") {
		t.Fatalf("saved: %s", again)
	}
}

// A Ferry device reached over LocalSend presents its identity certificate:
// a store that knows the device recognises it as that device; otherwise it
// is the LocalSend device of its fingerprint.
func TestRecognise(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := LoadOrCreate(t.TempDir())
	cert := a.Cert.Leaf
	if got := s.Recognise(cert); got != peer.FromCertificate(cert.Raw) {
		t.Fatalf("unknown device recognised as %+v", got)
	}
	if err := s.Seen(a.ID.Peer(), "desk", ""); err != nil {
		t.Fatal(err)
	}
	if got := s.Recognise(cert); got != a.ID.Peer() {
		t.Fatalf("known Ferry device over LocalSend is %+v", got)
	}
}

// Two Stores on one folder are two processes sharing a config (a running
// ferry-cli receive or the app, and ferry-cli devices --forget): a device
// one forgets is forgotten by the other too, which neither trusts it any
// more nor writes it back with its own later contacts; each keeps what the
// other wrote meanwhile.
func TestForgetHoldsWhileAnotherStoreRuns(t *testing.T) {
	dir := t.TempDir()
	running, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	running.every = time.Hour // its contacts wait for Flush, as within a busy second
	var x, y, z, w DeviceID
	x[0], y[0], z[0], w[0] = 1, 2, 3, 4
	if err := running.Pair(x.Peer(), "laptop", "10.0.0.5:47800", time.Now()); err != nil {
		t.Fatal(err)
	}
	devices, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := devices.Forget(x.Peer()); err != nil {
		t.Fatal(err)
	}
	if p, ok := running.Get(x.Peer()); ok {
		t.Errorf("the running store still holds the device forgotten: %+v", p)
	}
	if err := running.Seen(y.Peer(), "phone", ""); err != nil { // written at once
		t.Fatal(err)
	}
	if err := running.Seen(z.Peer(), "tablet", ""); err != nil { // waits for Flush
		t.Fatal(err)
	}
	if err := devices.Pair(w.Peer(), "desk", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := running.Flush(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range again.List() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"desk", "phone", "tablet"}; !slices.Equal(names, want) {
		t.Errorf("the file holds %q, want %q (the forgotten laptop gone, what both wrote kept)", names, want)
	}
	if p, ok := running.Get(w.Peer()); !ok || !p.Paired {
		t.Errorf("the running store does not know the device paired elsewhere: %+v %v", p, ok)
	}
}
