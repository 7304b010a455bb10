package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// offeredSHA is the sha256 the n-th offer the peer received gave for name.
func offeredSHA(t *testing.T, offers []map[string]any, n int, name string) string {
	t.Helper()
	files, _ := offers[n]["files"].(map[string]any)
	for _, f := range files {
		f := f.(map[string]any)
		if f["fileName"] == name {
			s, _ := f["sha256"].(string)
			return s
		}
	}
	t.Fatalf("offer %d has no %s: %v", n, name, offers[n])
	return ""
}

// TestLocalSendSendRemembersSHA256: a file's sum is taken as it uploads
// and given in the next offer of the same unchanged file; a changed file
// is offered without one (then remembered anew).
func TestLocalSendSendRemembersSHA256(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	to := lsPeerServer(t, p)
	src := filepath.Join(t.TempDir(), "photo.jpg")
	if err := os.WriteFile(src, []byte("first bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	for i, want := range []string{"", sum("first bytes")} {
		if _, r := lsSendWait(t, e, to, Items{Paths: []string{src}}, LocalSendSendOptions{}); r.State != StateDone {
			t.Fatalf("send %d: %+v", i, r)
		}
		_, _, offers, _, _, _ := p.Snapshot()
		if got := offeredSHA(t, offers, i, "photo.jpg"); got != want {
			t.Fatalf("send %d offered sha256 %q, want %q", i, got, want)
		}
	}
	// Changed (bytes and time): no sum, since none is known for it.
	later := time.Now().Add(time.Hour)
	os.WriteFile(src, []byte("other bytes"), 0o644)
	os.Chtimes(src, later, later)
	for i, want := range []string{"", sum("other bytes")} {
		if _, r := lsSendWait(t, e, to, Items{Paths: []string{src}}, LocalSendSendOptions{}); r.State != StateDone {
			t.Fatalf("send %d after the change: %+v", i, r)
		}
		_, _, offers, _, _, _ := p.Snapshot()
		if got := offeredSHA(t, offers, 2+i, "photo.jpg"); got != want {
			t.Fatalf("send %d after the change offered %q, want %q", i, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.opts.ConfigDir, shaCacheFile)); err != nil {
		t.Fatalf("the cache was not written: %v", err)
	}
}
