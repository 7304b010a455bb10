package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
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

// The reader that hashes ahead gives the file's bytes exactly (at most its
// offered size), and its sum only once it read all of them; a Read waiting
// for the next block returns when the reader is closed.
func TestHashingReaderReadsAheadExactly(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, hashBlock - 1, hashBlock, 3*hashBlock + 7, readAheadFrom - 1, readAheadFrom, readAheadFrom + 3*hashBlock + 7} {
		data := make([]byte, n+100) // the file grew by 100 bytes since it was offered
		for i := range data {
			data[i] = byte(i*7 + i>>9)
		}
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh := &fileHash{src: path, size: int64(n)}
		rc, err := fh.open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(rc, 3)))
		if err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(rc)
		rc.Close()
		got = append(got, rest...)
		if err != nil || !bytes.Equal(got, data[:n]) {
			t.Fatalf("%d bytes: read %d, %v, equal %v", n, len(got), err, bytes.Equal(got, data[:n]))
		}
		want := sha256.Sum256(data[:n])
		fh.mu.Lock()
		if fh.n != int64(n) || !bytes.Equal(fh.h.Sum(nil), want[:]) {
			t.Fatalf("%d bytes: hashed %d bytes, sum %x, want %x", n, fh.n, fh.h.Sum(nil), want)
		}
		fh.mu.Unlock()
	}

	// Closed half way (a file read ahead): no sum, and a later open
	// starts again.
	const big = readAheadFrom + 20*hashBlock
	path := filepath.Join(dir, "big")
	if err := os.WriteFile(path, make([]byte, big), 0o644); err != nil {
		t.Fatal(err)
	}
	fh := &fileHash{src: path, size: big}
	rc, _ := fh.open()
	if _, err := io.ReadFull(rc, make([]byte, hashBlock)); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if _, err := rc.Read(make([]byte, 10)); err == nil {
		t.Fatal("a Read after Close succeeded")
	}
	time.Sleep(20 * time.Millisecond) // the reading ahead stops
	fh.mu.Lock()
	if fh.h != nil {
		t.Fatalf("a read closed half way left a sum of %d bytes", fh.n)
	}
	fh.mu.Unlock()
	rc2, _ := fh.open()
	n, err := io.Copy(io.Discard, rc2)
	rc2.Close()
	if err != nil || n != big {
		t.Fatalf("the second open read %d, %v", n, err)
	}
	if fh.n != big {
		t.Fatalf("the second open hashed %d bytes", fh.n)
	}
}
