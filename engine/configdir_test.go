package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
)

// copyDir copies the flat folder src into a new temporary folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// testdata/config-main is a config dir written by main before addresses
// had kinds (identity, and a trust store with the "host:port"s each device
// was last reached at). It loads unchanged, and a followed device is
// looked for at those addresses over every kind.
func TestConfigDirFromMainLoads(t *testing.T) {
	dir := copyDir(t, "testdata/config-main")
	trustBefore, err := os.ReadFile(filepath.Join(dir, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := testEngine(t, Options{ConfigDir: dir})
	if got, want := e.ID(), "TPSVQOSRMKAQ364DQCPQGJZMXD4HDTQ47RD63Z3UIVLJNMZG4IIQ"; got != want {
		t.Errorf("ID %s, want %s", got, want)
	}
	peers := e.Trusted()
	if len(peers) != 2 {
		t.Fatalf("trusted %+v", peers)
	}
	byName := map[string]TrustedPeer{}
	for _, p := range peers {
		byName[p.Name] = p
	}
	desk, anna := byName["desk"], byName["Anna's laptop"]
	if desk.LastAddr != "[2001:db8::7]:51000" || anna.LastAddr != "198.51.100.4:47800" || !anna.Paired || !anna.AlwaysAccept || desk.Paired {
		t.Errorf("desk %+v, anna %+v", desk, anna)
	}
	id, err := identity.ParseID(desk.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := e.candidates(t.Context(), Target{ID: desk.ID, Follow: true}, id)
	want := []addr.Addr{
		addr.New(addr.QUIC, "[2001:db8::7]:51000"), addr.New(addr.TCP, "[2001:db8::7]:51000"),
		addr.New(addr.QUIC, "192.0.2.7:47800"), addr.New(addr.TCP, "192.0.2.7:47800"),
		addr.New(addr.QUIC, "[2001:db8::7]:47800"), addr.New(addr.TCP, "[2001:db8::7]:47800"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	e.Close()
	trustAfter, err := os.ReadFile(filepath.Join(dir, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(trustAfter) != string(trustBefore) {
		t.Errorf("loading rewrote trust.json:\n%s", trustAfter)
	}
}

// The candidates of a followed device: the resolver's first, then the
// target's own, the remembered ones and those hosts on DefaultPort, each
// address once, at most maxCandidates "host:port"s.
func TestCandidatesOrderAndBound(t *testing.T) {
	res := &fakeResolver{}
	e := testEngine(t, Options{Resolver: res})
	id := e.ident.ID // any valid ID
	res.set(id.String(), Target{Addrs: []addr.Addr{addr.New(addr.QUIC, "10.0.0.2:5000"), addr.New(addr.TCP, "10.0.0.2:5001")}})
	to := Target{ID: id.String(), Follow: true, Addrs: []addr.Addr{addr.New(addr.QUIC, "10.0.0.2:5000"), addr.New(addr.QUIC, "10.0.0.3:47800")}}
	got := e.candidates(t.Context(), to, id)
	want := []addr.Addr{
		addr.New(addr.QUIC, "10.0.0.2:5000"), addr.New(addr.TCP, "10.0.0.2:5001"),
		addr.New(addr.QUIC, "10.0.0.3:47800"),
		addr.New(addr.QUIC, "10.0.0.2:47800"), addr.New(addr.TCP, "10.0.0.2:47800"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	var many []addr.Addr
	for i := range 2 * maxCandidates {
		many = append(many, addr.New(addr.QUIC, "10.1.0."+string(rune('a'+i))+":47800"))
	}
	res.set(id.String(), Target{Addrs: many})
	if got := e.candidates(t.Context(), to, id); len(got) != maxCandidates {
		t.Errorf("%d candidates, want at most %d host:ports", len(got), maxCandidates)
	}
}
