package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFolderSentAgainKeepsItsSameFiles: a folder sent a second time by a
// trusted device, with a file added and one changed in its last chunk
// (same size), arrives with the added file and the changed one numbered
// beside the first version; the files unchanged, empty and of several
// chunks ones included, are the ones already there, not saved twice. Until
// 2026-12-07 every file came a second time as "name (1)". Each send
// verifies every file. A device not trusted sending the same files has
// them numbered, as before: it hears nothing of what the files here hold.
func TestFolderSentAgainKeepsItsSameFiles(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	pairEngines(t, send, recv)
	src := filepath.Join(t.TempDir(), "Photos")
	writeFile(t, filepath.Join(src, "a.jpg"), 200<<10)
	writeFile(t, filepath.Join(src, "big.bin"), 3<<20+5)
	edit := writeFile(t, filepath.Join(src, "sub", "edit.bin"), 3<<20)
	if err := os.WriteFile(filepath.Join(src, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for round, tp := range []string{"tcp", "quic"} {
		if round == 1 {
			writeFile(t, filepath.Join(src, "new.jpg"), 100<<10)
			edit[len(edit)-1] ^= 0xff
			if err := os.WriteFile(filepath.Join(src, "sub", "edit.bin"), edit, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		received := resultsOf(t, recv, Receiving, 1)
		// What the receiver says of each file, until its result.
		events, unsub := recv.Subscribe(4096)
		files := make(chan map[string]bool, 1)
		go func() {
			defer unsub()
			kept := map[string]bool{}
			for ev := range events {
				switch {
				case ev.Direction != Receiving:
				case ev.Kind == EventFile:
					kept[ev.File.Path] = ev.File.Kept
				case ev.Kind == EventResult:
					files <- kept
					return
				}
			}
		}()
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != res.Files {
			t.Fatalf("send %d: %s %q, %d of %d files verified", round+1, res.State, res.Err, res.Verified, res.Files)
		}
		if r := next(t, received); r.State != StateDone {
			t.Fatalf("received %d: %s %q", round+1, r.State, r.Err)
		}
		kept := <-files
		if round == 0 && fmt.Sprint(kept) != "map[Photos/a.jpg:false Photos/big.bin:false Photos/empty:false Photos/sub/edit.bin:false]" {
			t.Errorf("first send: files kept %v, want none of the four", kept)
		}
		if round == 1 {
			// The receiver says which it kept (the app's Details, ferry-cli).
			want := map[string]bool{"Photos/a.jpg": true, "Photos/big.bin": true, "Photos/empty": true, "Photos/new.jpg": false, "Photos/sub/edit.bin": false}
			if fmt.Sprint(kept) != fmt.Sprint(want) {
				t.Errorf("files kept as they were here: %v, want %v", kept, want)
			}
		}
	}
	var got []string
	dst := filepath.Join(recv.DownloadDir(), "Photos")
	err := filepath.WalkDir(dst, func(name string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(dst, name)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.jpg", "big.bin", "empty", "new.jpg", "sub/edit (1).bin", "sub/edit.bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("the folder holds %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "edit (1).bin")); err != nil || !slices.Equal(b, edit) {
		t.Errorf("the changed file's second version: %d bytes (%v), not what was sent", len(b), err)
	}
	noPartials(t, recv.DownloadDir())

	stranger := testEngine(t, Options{Name: "Stranger"})
	received := resultsOf(t, recv, Receiving, 1)
	if res := sendWait(t, stranger, target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Fatalf("a device not trusted: %s %q", res.State, res.Err)
	}
	next(t, received)
	if _, err := os.Stat(filepath.Join(dst, "a (1).jpg")); err != nil {
		t.Errorf("a device not trusted: its file is not numbered beside the same one (%v)", err)
	}
}
