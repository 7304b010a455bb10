package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
)

// The partial of a LocalSend upload that a crash ended (kill -9 of the
// receiver) is removed at the next start, as a receive link's is: LocalSend
// has no resume and no state lists it, so it stayed in the download folder
// for ever, listed nowhere (ferry-cli receive killed mid-upload left
// big.bin.partial and f0155.txt.partial beside the files sent again).
func TestLocalSendPartialOfACrashIsRemovedAtTheNextStart(t *testing.T) {
	e := testEngine(t, Options{})
	in := e.newInbox(peer.ID{}, "phone", "pipe", nil, nil)
	dest, err := store.Open(e.DownloadDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dest.Close() })
	in.Dest, in.DestDir = dest, e.DownloadDir()
	files := core.Files{{Path: "d/a.bin", Size: 1000}, {Path: "b.bin", Size: 10}}
	in.Files, in.Accepted = files, []int{0, 1}
	s := &lsSession{in: in, files: files, ctx: context.Background()}
	a, err := s.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(make([]byte, 400)); err != nil {
		t.Fatal(err)
	}
	b, err := s.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(make([]byte, 10))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(e.DownloadDir(), "d", "a.bin.partial")
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("the upload's partial: %v", err)
	}
	// The crash: the process ends with the upload under way, nothing of
	// the session's end run, and what it logged is another process's past
	// (an unlocked log of the same lines).
	logs, _ := filepath.Glob(filepath.Join(e.resume.Path(), linkLogPrefix+"*"+linkLogSuffix))
	for i, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.resume.Path(), fmt.Sprintf("%scrashed%d%s", linkLogPrefix, i, linkLogSuffix)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.cleanLinkUploads(); n != 1 {
		t.Errorf("the next start removed %d partials, want 1", n)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("a.bin.partial after the next start: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.DownloadDir(), "b.bin")); err != nil {
		t.Errorf("the saved b.bin: %v", err)
	}
	if ps := e.Partials(); len(ps) != 0 {
		t.Errorf("unfinished transfers listed: %+v", ps)
	}
}
