package engine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDiscardRefusedWhileReceiving: the unfinished transfers Settings and
// `partials` list include one that is arriving now; discarding it deleted
// its partial under the receiver, and the transfer failed at its end
// ("rename a.bin.partial a.bin: no such file or directory"). It is marked
// Receiving and not discarded until it stops; then it is.
func TestDiscardRefusedWhileReceiving(t *testing.T) {
	dl := t.TempDir()
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: dl})
	const chunk = 64 << 10
	part := filepath.Join(dl, "a.bin.partial")
	runRaw(t, recv, func(p *rawPeer) {
		if !p.firstOfTwoChunks(t, chunk) {
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if ps := recv.Partials(); len(ps) == 1 && ps[0].Bytes > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		ps := recv.Partials()
		if len(ps) != 1 || !ps[0].Receiving {
			t.Errorf("while it arrives: %+v, want it listed as Receiving", ps)
			return
		}
		if err := recv.DiscardPartial(ps[0].Key); !errors.Is(err, ErrPartialInUse) {
			t.Errorf("discarded while it arrives: %v", err)
		}
		if _, err := os.Stat(part); err != nil {
			t.Errorf("the partial under the receiver: %v", err)
		}
		p.conn.Close(nil) // the sender hangs up: the transfer stops, its partial kept
	})
	ps := recv.Partials()
	if len(ps) != 1 || ps[0].Receiving {
		t.Fatalf("once it stopped: %+v, want it listed, not Receiving", ps)
	}
	if err := recv.DiscardPartial(ps[0].Key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the partial after Discard: %v", err)
	}
}

// TestDiscardKeepsWhatItCouldNotRemove: a partial that cannot be removed
// (on Windows, open in another program that does not share deletion, such
// as a player previewing it, or under Wine always) stays listed with its
// state, and the discard says why; it dropped the state and said nothing,
// so the file stayed in the download folder, listed nowhere and never aged
// out. (chattr +i keeps even root from removing a name in the folder.)
func TestDiscardKeepsWhatItCouldNotRemove(t *testing.T) {
	dl := t.TempDir()
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: dl})
	const chunk = 64 << 10
	part := filepath.Join(dl, "a.bin.partial")
	runRaw(t, recv, func(p *rawPeer) {
		if !p.firstOfTwoChunks(t, chunk) {
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if ps := recv.Partials(); len(ps) == 1 && ps[0].Bytes > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		p.conn.Close(nil)
	})
	ps := recv.Partials()
	if len(ps) != 1 || ps[0].Receiving {
		t.Fatalf("once it stopped: %+v, want it listed, not Receiving", ps)
	}
	if out, err := exec.Command("chattr", "+i", dl).CombinedOutput(); err != nil {
		t.Skipf("cannot make a folder immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dl).Run() })
	err := recv.DiscardPartial(ps[0].Key)
	if !errors.Is(err, ErrPartialNotRemoved) {
		t.Errorf("discard of a partial that cannot be removed: %v, want ErrPartialNotRemoved", err)
	}
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("the partial: %v", err)
	}
	if left := recv.Partials(); len(left) != 1 || left[0].Key != ps[0].Key || len(left[0].Partials) != 1 {
		t.Fatalf("after the discard that could not remove its partial: %+v, want it still listed", left)
	}
	// Once it can go, discarding it again removes it.
	if out, err := exec.Command("chattr", "-i", dl).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v %s", err, out)
	}
	if err := recv.DiscardPartial(ps[0].Key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the partial after the second discard: %v", err)
	}
	if left := recv.Partials(); len(left) != 0 {
		t.Errorf("still listed: %+v", left)
	}
}
