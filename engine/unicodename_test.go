package engine

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

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
