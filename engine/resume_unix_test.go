//go:build unix

package engine

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file rewritten in place between two attempts, its modification time
// set back afterwards (as VeraCrypt does to its containers, or touch -r),
// keeps its size and mtime: only its change time tells. It starts over;
// it was resumed, the receiver keeping the first attempt's bytes and
// fetching the rest of the new content, and the sender's cached leaves of
// the old bytes made the mix verify.
func TestResumeRestartsAFileRewrittenWithItsMTimeRestored(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	const size = 48 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "tcp", size)
	if recv.Partials()[0].Bytes == 0 {
		t.Fatal("the partial holds nothing")
	}
	st, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(big, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fresh := make([]byte, size)
	rand.Read(fresh)
	if _, err := f.WriteAt(fresh, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(big, time.Time{}, st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if now, err := os.Stat(big); err != nil || !now.ModTime().Equal(st.ModTime()) || now.Size() != size {
		t.Fatalf("the rewritten file's mtime was not set back: %v", err)
	}
	res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s %q, %d verified", res.State, res.Err, res.Verified)
	}
	if res.Kept != 0 {
		t.Errorf("the receiver kept %d bytes of the file as it was before", res.Kept)
	}
	sameTree(t, big, recv.DownloadDir())
}
