package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// TestDownloadFolderDeletedUnderATransfer: the download folder deleted
// while files arrive ends the transfer within moments, in words, on both
// sides, and no resume state is left claiming what went with the folder.
// Before, the sender went on to the last byte and every file failed at its
// end with "store: finalize "a.bin": rename a.bin.partial a.bin: no such
// file or directory", and the kept state said 64 KB were held in a folder
// that no longer existed.
// firstOfTwoChunks offers a.bin, two chunks long, under a manifest (so
// the receiver keeps resume state) and sends its first chunk; false (the
// test told) when the offer was not accepted.
func (p *rawPeer) firstOfTwoChunks(t *testing.T, chunk int) bool {
	t.Helper()
	p.hello()
	p.offerManifest("m1", chunk, wire.FileEntry{Path: "a.bin", Size: 2 * int64(chunk)})
	if !p.waitAccepted() {
		t.Error("not accepted")
		return false
	}
	first := make([]byte, chunk)
	p.data(frame(0, 0, first, merkle.Leaf(first)))
	return true
}

func TestDownloadFolderDeletedUnderATransfer(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dl")
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: dl, SessionIdleTimeout: 4 * time.Second})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	const chunk = 64 << 10
	var told wire.Message
	runRaw(t, recv, func(p *rawPeer) {
		if !p.firstOfTwoChunks(t, chunk) {
			return
		}
		// The first chunk is on disk (the partial holds it) before the
		// folder goes.
		deadline := time.Now().Add(10 * time.Second)
		for len(recv.Partials()) == 0 && time.Now().Before(deadline) {
			if st, err := os.Stat(filepath.Join(dl, "a.bin.partial")); err == nil && st.Size() > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := os.RemoveAll(dl); err != nil {
			t.Error(err)
		}
		for {
			m, err := p.ctl.recvTimeout(10 * time.Second)
			if err != nil {
				return
			}
			if _, ok := m.(*wire.Cancel); ok {
				told = m
				return
			}
		}
	})
	c, ok := told.(*wire.Cancel)
	if !ok || c.Code != wire.CodeVerifyFailed || !strings.Contains(c.Reason, "the download folder "+dl+" was deleted or moved away while it arrived") {
		t.Errorf("the sender was told %#v", told)
	}
	var res *Result
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventResult {
			res = ev.Result
		}
	}
	if res == nil || res.State != StateFailed || res.Err != "The file could not be saved: the download folder "+dl+" was deleted or moved away while it arrived." {
		t.Errorf("receiver result %+v", res)
	}
	if p := recv.Partials(); len(p) != 0 {
		t.Errorf("resume state left for a folder that is gone: %+v", p)
	}
}

// TestDownloadFolderThatIsAFileRefusesInWords: a download folder replaced
// by a file after the receiver started (it checks the folder when it is
// chosen) refuses the offer in a sentence that says so, and the file is
// left as it was. Both sides read "Read or write error: download folder:
// store: open "/x/dl": mkdir /x/dl: not a directory."
func TestDownloadFolderThatIsAFileRefusesInWords(t *testing.T) {
	dl := filepath.Join(t.TempDir(), "dl")
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: dl})
	if err := os.RemoveAll(dl); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dl, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := decisionOn(t, recv, wire.FileEntry{Path: "a.txt", Size: 5})
	if d == nil || d.Accept || !strings.Contains(d.Reason, "its download folder "+dl+" is a file, not a folder") ||
		strings.Contains(d.Reason, "store:") || strings.Contains(d.Reason, "mkdir") {
		t.Errorf("the sender was told %#v", d)
	}
	if b, err := os.ReadFile(dl); err != nil || string(b) != "not a folder" {
		t.Errorf("the file in the folder's place holds %q, %v", b, err)
	}
}
