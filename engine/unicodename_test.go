package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestDecomposedNameClashesWithTheSameComposedName: a Mac names files
// decomposed ("cafe" and a combining acute, NFD); a Linux or Windows
// receiver that holds "café.txt" typed there (composed, NFC) saved a Mac's
// "café.txt" byte for byte beside it, two files of one name to the eye
// ("ls" showed "café.txt" twice), and a Mac's folder "Été" beside the
// "Été" there. Names are saved composed: the file is kept as "café
// (1).txt", reported as saved as that, and the folder's files go into the
// folder of that name, from a Ferry device, a LocalSend app and a browser
// alike.
func TestDecomposedNameClashesWithTheSameComposedName(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("a Mac's file systems find a name in either form")
	}
	const (
		cafeNFD = "cafe\u0301.txt"
		cafeNFC = "caf\u00e9.txt"
		eteNFD  = "E\u0301te\u0301"
		eteNFC  = "\u00c9t\u00e9"
	)
	e, srv, lsAddr := lsEngine(t, Options{}, LocalSendOptions{})
	dl := e.DownloadDir()
	if err := os.WriteFile(filepath.Join(dl, cafeNFC), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dl, eteNFC), 0o755); err != nil {
		t.Fatal(err)
	}
	events, unsub := e.Subscribe(1024)
	defer unsub()
	saved := func() (as []string) {
		t.Helper()
		for ev := range events {
			if ev.Kind == EventFile && ev.Direction == Receiving {
				as = append(as, ev.File.SavedAs)
			}
			if ev.Kind == EventResult && ev.Direction == Receiving {
				if ev.Result.State != StateDone {
					t.Fatalf("result %+v", ev.Result)
				}
				slices.Sort(as)
				return as
			}
		}
		return nil
	}

	src := t.TempDir()
	writeFile(t, filepath.Join(src, cafeNFD), 10)
	writeFile(t, filepath.Join(src, eteNFD, "x.txt"), 10)
	send := testEngine(t, Options{})
	if r := sendWait(t, send, target(e), []string{filepath.Join(src, cafeNFD), filepath.Join(src, eteNFD)}, SendOptions{}); r.State != StateDone || r.Verified != 2 {
		t.Fatalf("result %+v", r)
	}
	if as, want := saved(), []string{"caf\u00e9 (1).txt", eteNFC + "/x.txt"}; !slices.Equal(as, want) {
		t.Errorf("Ferry: saved as %q, want %q", as, want)
	}

	sr, err := testPeer(t).Send(context.Background(), lsAddr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: cafeNFD, Data: []byte("hello")}}, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("LocalSend: %+v %v", sr, err)
	}
	if as, want := saved(), []string{"caf\u00e9 (2).txt"}; !slices.Equal(as, want) {
		t.Errorf("LocalSend: saved as %q, want %q", as, want)
	}

	endpoint, _ := browserLink(t, e, browserIdle)
	testutil.TusUpload(t, endpoint, cafeNFD, 5, []byte("hello"))
	if as, want := saved(), []string{"caf\u00e9 (3).txt"}; !slices.Equal(as, want) {
		t.Errorf("browser: saved as %q, want %q", as, want)
	}

	var names []string
	for _, dir := range []string{dl, filepath.Join(dl, eteNFC)} {
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			names = append(names, de.Name())
		}
	}
	want := []string{eteNFC, cafeNFC, "caf\u00e9 (1).txt", "caf\u00e9 (2).txt", "caf\u00e9 (3).txt", "x.txt"}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the folder holds %q, want %q", names, want)
	}
	if b, err := os.ReadFile(filepath.Join(dl, cafeNFC)); err != nil || string(b) != "mine" {
		t.Errorf("the file that was there: %q, %v", b, err)
	}
}

// TestLongNamesAreShortenedToFit: a name a Mac or Windows holds, which
// count its length in characters, may be more than the 255 bytes Linux
// takes (100 Japanese characters are 300 bytes). Such a file was refused
// before the prompt ("element is 304 bytes, limit 255"), from a Ferry
// device, a LocalSend app and a browser alike; it arrives under its name
// cut to fit, the extension kept, reported as saved as that, and a second
// file whose name is cut to the same is numbered, as any name taken is.
func TestLongNamesAreShortenedToFit(t *testing.T) {
	long := strings.Repeat("日", 100) + ".pdf"   // 304 bytes
	cut := strings.Repeat("日", 83) + ".pdf"     // 253 bytes
	folder := strings.Repeat("é", 150)          // 300 bytes
	folderCut := strings.Repeat("é", 127)       // 254 bytes
	other := strings.Repeat("日", 100) + "x.pdf" // cut to the same as long
	e, srv, lsAddr := lsEngine(t, Options{}, LocalSendOptions{})
	events, unsub := e.Subscribe(1024)
	defer unsub()
	saved := func() (as []string) {
		t.Helper()
		for ev := range events {
			if ev.Kind == EventFile && ev.Direction == Receiving {
				if !ev.File.Verified {
					t.Errorf("%q: %s", ev.File.Path, ev.File.Err)
				}
				as = append(as, ev.File.SavedAs)
			}
			if ev.Kind == EventResult && ev.Direction == Receiving {
				slices.Sort(as)
				return as
			}
		}
		return nil
	}

	good := []byte("hello, world")
	leaf := merkle.Leaf(good)
	runRaw(t, e, func(p *rawPeer) {
		p.hello()
		p.offer(wire.FileEntry{Path: long, Size: int64(len(good))}, wire.FileEntry{Path: folder + "/" + other, Size: int64(len(good))},
			wire.FileEntry{Path: other, Size: int64(len(good))})
		if !p.waitAccepted() {
			t.Error("not accepted")
			return
		}
		for i := range uint32(3) {
			p.data(frame(i, 0, good, leaf), rootFrame(i, merkle.Root([]merkle.Hash{leaf})))
		}
		p.ctl.send(&wire.SenderDone{})
		p.hangUpAfterResult()
	})
	numbered := strings.Repeat("日", 82) + " (1).pdf"
	want := []string{cut, numbered, folderCut + "/" + cut}
	slices.Sort(want)
	if as := saved(); !slices.Equal(as, want) {
		t.Errorf("Ferry: saved as %q, want %q", as, want)
	}

	sr, err := testPeer(t).Send(context.Background(), lsAddr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: long, Data: []byte("hello")}}, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("LocalSend: %+v %v", sr, err)
	}
	if as, want := saved(), []string{strings.Repeat("日", 82) + " (2).pdf"}; !slices.Equal(as, want) {
		t.Errorf("LocalSend: saved as %q, want %q", as, want)
	}

	endpoint, _ := browserLink(t, e, browserIdle)
	testutil.TusUpload(t, endpoint, long, 5, []byte("hello"))
	if as, want := saved(), []string{strings.Repeat("日", 82) + " (3).pdf"}; !slices.Equal(as, want) {
		t.Errorf("browser: saved as %q, want %q", as, want)
	}
	if b, err := os.ReadFile(filepath.Join(e.DownloadDir(), cut)); err != nil || string(b) != string(good) {
		t.Errorf("%s: %q, %v", cut, b, err)
	}
}
