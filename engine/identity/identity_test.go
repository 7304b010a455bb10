package identity

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadOrCreatePersistsPrivately(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir)
	if err != nil || a.ID != b.ID {
		t.Fatalf("second load: %v, ID %s vs %s", err, b.ID, a.ID)
	}
	for _, f := range []string{certFile, keyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, st.Mode().Perm())
		}
	}
	os.Remove(filepath.Join(dir, keyFile))
	if _, err := LoadOrCreate(dir); err == nil || !strings.Contains(err.Error(), "only one of") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

// A first run killed between writing the key and its certificate (a
// ferry-cli send killed 0.2 s after it started, in a kill -9 torture run)
// left the key alone, and every later start failed with "only one of
// identity.crt and identity.key exists" until the key was moved away (a new
// device). The certificate is made again from the key: the same device ID.
func TestKeyWithoutItsCertificateIsCertifiedAgain(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, certFile)); err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("the key without its certificate: %v", err)
	}
	if b.ID != a.ID {
		t.Errorf("device ID %s after the certificate was made again, want %s", b.ID, a.ID)
	}
	c, err := LoadOrCreate(dir)
	if err != nil || c.ID != a.ID {
		t.Errorf("the next start: %v, ID %s, want %s", err, c.ID, a.ID)
	}
	if st, err := os.Stat(filepath.Join(dir, certFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the certificate made again: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, certFile))
	if _, err := LoadOrCreate(dir); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged key without its certificate: %v", err)
	}
}

// idCases double as the fuzz seeds of FuzzParseID.
var idCases = []struct {
	in string
	ok bool
}{
	{"", false},
	{"ABC", false},
	{strings.Repeat("A", 52), true},
	{strings.Repeat("a", 52), true},
	{strings.Repeat("AAAA-", 13)[:64], true},
	{strings.Repeat("A", 51), false},
	{strings.Repeat("A", 53), false},
	{strings.Repeat("1", 52), false}, // not base32
	{strings.Repeat("A", 51) + "\x00", false},
}

func TestParseID(t *testing.T) {
	for _, c := range idCases {
		_, err := ParseID(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseID(%q) err=%v, want ok=%v", c.in, err, c.ok)
		}
	}
	id, _ := LoadOrCreate(t.TempDir())
	for _, form := range []string{id.ID.String(), id.ID.Human(), strings.ToLower(id.ID.Human())} {
		got, err := ParseID(form)
		if err != nil || got != id.ID {
			t.Errorf("ParseID(%q) = %v, %v", form, got, err)
		}
	}
}

func FuzzParseID(f *testing.F) {
	for _, c := range idCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if again, err := ParseID(id.String()); err != nil || again != id {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}

func TestTrustStore(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := LoadOrCreate(t.TempDir())
	b, _ := LoadOrCreate(t.TempDir())
	if err := s.Seen(a.ID.Peer(), "desk", "10.0.0.5:47800"); err != nil {
		t.Fatal(err)
	}
	// Another key at a known address is refused; a known key anywhere is fine.
	if err := s.CheckAddr("10.0.0.5:47800", b.ID.Peer()); err == nil {
		t.Error("a new key at a known address was accepted")
	}
	if err := s.CheckAddr("10.0.0.5:47800", a.ID.Peer()); err != nil {
		t.Error(err)
	}
	s.SetAlwaysAccept(a.ID.Peer(), "", true)
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s2.Get(a.ID.Peer())
	if !ok || !p.AlwaysAccept || p.Name != "desk" || p.LastAddrs[0] != "10.0.0.5:47800" {
		t.Fatalf("reloaded %+v", p)
	}
	os.WriteFile(filepath.Join(dir, trustFile), []byte("{broken"), 0o600)
	var de *DamagedError
	if _, err := OpenStore(dir); !errors.As(err, &de) || de.Path != filepath.Join(dir, trustFile) {
		t.Errorf("a damaged trust store: %v, want a *DamagedError naming it", err)
	}
}

// Issue #27 (6): a flood of contacts from fresh identities (accepted
// offers) costs one write of the trust store per period, not one each;
// nothing recorded is lost (Flush); a user's decision is written at once.
func TestSeenWritesBatched(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.every = time.Hour // the test decides when the period ends: Flush
	const flood = 500
	ids := make([]DeviceID, flood)
	for i := range ids {
		ids[i][0], ids[i][1] = byte(i), byte(i>>8)
		if err := s.Seen(ids[i].Peer(), fmt.Sprintf("flood %d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if s.saves != 1 {
		t.Errorf("%d contacts wrote the store %d times, want once (the first, after a quiet period)", flood, s.saves)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.saves != 2 {
		t.Errorf("Flush wrote %d times in all, want 2", s.saves)
	}
	again, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(again.List()); n != flood {
		t.Errorf("the store holds %d devices after Flush, want %d", n, flood)
	}
	if err := s.Flush(); err != nil || s.saves != 2 {
		t.Errorf("a Flush with nothing due wrote (%d writes, %v)", s.saves, err)
	}
	if err := s.SetAlwaysAccept(ids[0].Peer(), "", true); err != nil || s.saves != 3 {
		t.Errorf("a user's decision was not written at once (%d writes, %v)", s.saves, err)
	}
}

// TestDamagedKeyPairIsSaidNotReplaced: a key pair that does not load is
// never replaced (a new key is a new device to everyone that knows this
// one); the error names the files and what to do, where it said only
// "identity: load key pair: tls: failed to find any PEM data in key input".
func TestDamagedKeyPairIsSaidNotReplaced(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, keyFile)
	if err := os.WriteFile(key, []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadOrCreate(dir)
	if err == nil {
		t.Fatal("a damaged key pair loaded")
	}
	for _, want := range []string{"(identity.crt and identity.key in " + dir + ") is damaged", "PEM", "move both away to start as a new device"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
	if b, _ := os.ReadFile(key); string(b) != "junk\n" {
		t.Errorf("the damaged key was replaced: %q", b)
	}
}

// A process killed while it wrote its key pair left ".identity.crt.tmpNNN"
// in the config folder (ferry-cli killed with -9 at its first start); the
// next start removes such leftovers, and only them.
func TestLeftoverTempFilesAreRemovedAtStart(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	left := []string{".identity.crt.tmp123456", ".identity.key.tmp42"}
	for _, n := range append(left, "keep.txt") {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range left {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s is still there", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Errorf("another file went: %v", err)
	}
}
