package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/store"

	"github.com/ferrydrop/ferry/engine/wire"
)

// folderTree writes a project folder with files and empty folders: two
// empty branches (one three deep) beside folders that hold files.
func folderTree(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "project")
	writeFile(t, filepath.Join(src, "src", "main.go"), 3000)
	writeFile(t, filepath.Join(src, "README"), 100)
	for _, d := range []string{"logs", "build/cache/tmp", "src/testdata"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// emptyFoldersUnder lists the folders under dir that hold nothing, as
// slash paths relative to dir.
func emptyFoldersUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A folder's empty folders arrive with its files, over either transport,
// and both sides count them.
func TestEmptyFoldersArrive(t *testing.T) {
	for _, tp := range []string{"tcp", "quic"} {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			got := resultsOf(t, recv, Receiving, 1)
			send := testEngine(t, Options{})
			src := folderTree(t)
			res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
			if res.State != StateDone || res.Folders != 3 || res.FoldersLeftOut != 0 {
				t.Fatalf("send: %s %q, %d folders made, %d left out; want done, 3 made", res.State, res.Err, res.Folders, res.FoldersLeftOut)
			}
			if r := next(t, got); r.State != StateDone || r.Folders != 3 {
				t.Fatalf("receive: %s %q, %d folders", r.State, r.Err, r.Folders)
			}
			sameTree(t, src, recv.DownloadDir())
			want := []string{"project/build/cache/tmp", "project/logs", "project/src/testdata"}
			if got := emptyFoldersUnder(t, recv.DownloadDir()); !slices.Equal(got, want) {
				t.Errorf("empty folders received: %q, want %q", got, want)
			}
		})
	}
}

// Where the folder's name is taken by a file, the files arrive in
// "project (1)", and so do its empty folders.
func TestEmptyFoldersFollowARenamedFolder(t *testing.T) {
	recv := startReceiver(t, Options{})
	writeFile(t, filepath.Join(recv.DownloadDir(), "project"), 10)
	send := testEngine(t, Options{})
	res := sendWait(t, send, target(recv), []string{folderTree(t)}, SendOptions{Transport: "tcp"})
	if res.State != StateDone {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	want := []string{"project (1)/build/cache/tmp", "project (1)/logs", "project (1)/src/testdata"}
	if got := emptyFoldersUnder(t, recv.DownloadDir()); !slices.Equal(got, want) {
		t.Errorf("empty folders received: %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(recv.DownloadDir(), "project (1)", "src", "main.go")); err != nil {
		t.Error(err)
	}
}

// A receiver of an older build does not take folders: the files arrive,
// and the sender's result says how many empty folders were left out.
func TestEmptyFoldersToAnOlderReceiver(t *testing.T) {
	recv := testEngine(t, Options{})
	recv.features = []string{wire.FeatureResume, wire.FeatureText, wire.FeatureUnsent}
	if err := recv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	send := testEngine(t, Options{})
	src := folderTree(t)
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Folders != 0 || res.FoldersLeftOut != 3 {
		t.Fatalf("send: %s %q, %d folders made, %d left out; want done, 3 left out", res.State, res.Err, res.Folders, res.FoldersLeftOut)
	}
	sameTree(t, src, recv.DownloadDir())
	if got := emptyFoldersUnder(t, recv.DownloadDir()); len(got) != 0 {
		t.Errorf("empty folders made by a receiver that does not take them: %q", got)
	}
}

// A send of nothing but empty folders has nothing to carry them, and says
// so; beside a file it sends them.
func TestOnlyEmptyFoldersAreNothingToSend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := buildManifestSkipping([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "they hold only 1 empty folder") {
		t.Errorf("got %v", err)
	}
	file := filepath.Join(t.TempDir(), "note.txt")
	writeFile(t, file, 5)
	m, _, err := buildManifestSkipping([]string{dir, file})
	if err != nil || len(m.files) != 1 || !slices.Equal(m.folders, []string{"empty/a/b"}) {
		t.Errorf("files %v, folders %q, %v; want note.txt and empty/a/b", m.files, m.folders, err)
	}
}

// An empty folder that cannot be made (a name this device does not store)
// fails the transfer, saying which, after every file was saved; nothing
// is made outside the download folder for a peer's "../" or absolute path.
func TestEmptyFolderThatCannotBeMade(t *testing.T) {
	good := []byte("hello, world")
	for _, c := range []struct{ folder, want string }{
		{"old\x1b", `1 of 2 empty folders could not be made: "old\x1b" (control character U+001B not allowed); the accepted files arrived.`},
		{"../outside", `1 of 2 empty folders could not be made: "../outside" (`},
		{"/abs", `1 of 2 empty folders could not be made: "/abs" (`},
	} {
		t.Run(c.folder, func(t *testing.T) {
			recv := testEngine(t, Options{})
			events, unsub := recv.Subscribe(256)
			defer unsub()
			p, done := connectRaw(t, recv)
			go func() {
				p.hello()
				p.ctl.send(&wire.Offer{Transfer: newTransferID(), ChunkSize: 64 << 10, Files: 1, TotalBytes: int64(len(good)), Folders: 2})
				p.ctl.send(&wire.OfferFiles{Start: 0, Files: []wire.FileEntry{{Path: "a.txt", Size: int64(len(good))}}})
				p.ctl.send(&wire.OfferFolders{Start: 0, Paths: []string{c.folder, "fine/empty"}})
				if p.waitAccepted() {
					leaf := merkle.Leaf(good)
					p.data(frame(0, 0, good, leaf), rootFrame(0, merkle.Root([]merkle.Hash{leaf})))
					p.ctl.send(&wire.SenderDone{})
					for range 2 { // the file's result, the transfer's
						m, err := p.ctl.recvTimeout(5 * time.Second)
						if r, ok := m.(*wire.Result); ok && (r.OK || r.Code != wire.CodeVerifyFailed || !strings.Contains(r.Reason, "empty folder")) {
							t.Errorf("told the sender %+v", r)
						}
						if err != nil {
							break
						}
					}
				}
				p.conn.Close(nil)
			}()
			<-done
			var res *Result
			for len(events) > 0 {
				if ev := <-events; ev.Kind == EventResult {
					res = ev.Result
				}
			}
			if res == nil || res.State != StateFailed || !strings.Contains(res.Err+res.Detail, c.want) || res.Verified != 1 || res.Folders != 1 {
				t.Fatalf("result %+v, want failed with %q, the file verified, one folder made", res, c.want)
			}
			if got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "a.txt")); err != nil || string(got) != string(good) {
				t.Errorf("a.txt: %q, %v", got, err)
			}
			if got := emptyFoldersUnder(t, recv.DownloadDir()); !slices.Equal(got, []string{"fine/empty"}) {
				t.Errorf("empty folders made: %q", got)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(recv.DownloadDir()), "outside")); err == nil {
				t.Error("a folder was made outside the download folder")
			}
		})
	}
}

// A receiver that cannot write its download folder says so in the system's
// words, on both sides (its folder named on its own side only), and not as
// a failed verification: the offer is refused as it arrives, so no file
// crosses and none fails on its own. (chattr +i keeps even root out of the
// folder.)
func TestFilesThatCannotBeSavedSayWhy(t *testing.T) {
	recv := startReceiver(t, Options{})
	dl := recv.DownloadDir()
	if out, err := exec.Command("chattr", "+i", dl).CombinedOutput(); err != nil {
		t.Skipf("cannot make a folder immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dl).Run() })
	got := resultsOf(t, recv, Receiving, 1)
	send := testEngine(t, Options{})
	events, unsub := send.Subscribe(256)
	defer unsub()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "folder", "sub", "y.txt"), 10)
	writeFile(t, filepath.Join(src, "a.txt"), 10)
	res := sendWait(t, send, target(recv), []string{filepath.Join(src, "folder"), filepath.Join(src, "a.txt")}, SendOptions{Transport: "tcp"})
	want := "none of the 2 files could be saved: the download folder cannot be written (operation not permitted)."
	if res.State != StateFailed || res.Err != "On "+recv.Name()+", "+want || res.Bytes != 0 {
		t.Errorf("send: %s %q, %d bytes", res.State, res.Err, res.Bytes)
	}
	if r := next(t, got); r.State != StateFailed || r.Err != "None of the 2 files could be saved here: the download folder "+dl+" cannot be written (operation not permitted)." {
		t.Errorf("receive: %s %q", r.State, r.Err)
	}
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventFile {
			t.Errorf("%s: %q (the offer was refused whole)", ev.File.Path, ev.File.Err)
		}
	}
}

// Empty folders take disk (a block each): an offer whose files fit but
// whose folders would not is refused as too large for the disk, before
// anyone is asked. (A peer's million empty folders are 4 GB of blocks.)
func TestEmptyFoldersCountInTheSpaceCheck(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk})
	free, err := store.FreeSpace(recv.DownloadDir())
	if err != nil {
		t.Skipf("free space cannot be measured here: %v", err)
	}
	const folders = 100_000 // 400 MB of blocks
	paths := make([]string, folders)
	for i := range paths {
		paths[i] = fmt.Sprintf("d/%d", i)
	}
	size := free - 1<<20 // the file alone fits, with a megabyte to spare
	var d *wire.Decision
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.ctl.send(&wire.Offer{Transfer: newTransferID(), ChunkSize: 1 << 20, Files: 1, TotalBytes: size, Folders: folders})
		p.ctl.send(&wire.OfferFiles{Start: 0, Files: []wire.FileEntry{{Path: "d/big.bin", Size: size}}})
		for start := 0; start < folders; start += wire.MaxFilesPerPart {
			p.ctl.send(&wire.OfferFolders{Start: start, Paths: paths[start:min(start+wire.MaxFilesPerPart, folders)]})
		}
		d, _ = expect[*wire.Decision](p.ctl.recvTimeout(10 * time.Second))
		p.conn.Close(nil)
	})
	if d == nil || d.Accept || d.Code != wire.CodeNoSpace {
		t.Fatalf("decision %+v, want a refusal for want of space", d)
	}
}

// Names of 248-255 bytes (valid everywhere, a long title in Japanese is 85
// characters) arrive, small and large, over either transport: they were
// refused, as leaving no room for the partial's suffix.
func TestLongNamesArrive(t *testing.T) {
	for _, tp := range []string{"tcp", "quic"} {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			src := filepath.Join(t.TempDir(), "long")
			writeFile(t, filepath.Join(src, strings.Repeat("日", 85)), 3000)
			writeFile(t, filepath.Join(src, strings.Repeat("n", 250)+".jpeg"), 5<<20+1)
			res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
			if res.State != StateDone || res.Verified != 2 {
				t.Fatalf("send: %s %q (%d verified)", res.State, res.Err, res.Verified)
			}
			sameTree(t, src, recv.DownloadDir())
		})
	}
}

// Given paths of the same name (two "report.pdf" from two folders, two
// "photos" folders) all arrive, the later ones as "report (1).pdf" and
// "photos (1)", which the send's offer event names; a path given twice is
// sent once. The send was refused ("two of the given paths would arrive
// as ...: send them separately").
func TestGivenPathsOfTheSameNameAllArrive(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	events, unsub := send.Subscribe(256)
	defer unsub()
	top := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	paths := []string{write("a/report.pdf", "a"), write("b/report.pdf", "b"), write("c/report (1).pdf", "c"),
		filepath.Join(top, "a"), filepath.Join(top, "b")}
	write("a/photos/1.jpg", "a1")
	write("b/photos/1.jpg", "b1")
	paths = append(paths, filepath.Join(top, "a", "photos"), filepath.Join(top, "b", "photos"), paths[0])
	res := sendWait(t, send, target(recv), paths, SendOptions{})
	if res.State != StateDone {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	want := map[string]string{
		"report.pdf": "a", "report (2).pdf": "b", "report (1).pdf": "c",
		"a/report.pdf": "a", "a/photos/1.jpg": "a1", "b/report.pdf": "b", "b/photos/1.jpg": "b1",
		"photos/1.jpg": "a1", "photos (1)/1.jpg": "b1",
	}
	for rel, content := range want {
		if got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), filepath.FromSlash(rel))); err != nil || string(got) != content {
			t.Errorf("%s: %q, %v; want %q", rel, got, err, content)
		}
	}
	if res.Files != len(want) {
		t.Errorf("%d files sent, want %d", res.Files, len(want))
	}
	var renamed []RenamedPath
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventOffer && ev.Direction == Sending {
			renamed = ev.Offer.Renamed
		}
	}
	wantRenamed := []RenamedPath{{Path: paths[1], As: "report (2).pdf"}, {Path: filepath.Join(top, "b", "photos"), As: "photos (1)"}}
	if !slices.Equal(renamed, wantRenamed) {
		t.Errorf("the offer names %+v as renamed, want %+v", renamed, wantRenamed)
	}
}

// Files arrive with their modification times (to the nanosecond here) and,
// on Unix, executable where they were: photos keep their dates, a script
// runs, as with cp -p, rsync -a or AirDrop. Small and large files, over
// either transport. They arrived with the time they arrived and mode 0644.
func TestModTimesAndExecutableBitsArrive(t *testing.T) {
	for _, tp := range []string{"tcp", "quic"} {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			src := filepath.Join(t.TempDir(), "project")
			when := map[string]time.Time{
				"photo.jpg":     time.Date(2014, 8, 1, 9, 15, 0, 123456789, time.UTC),
				"video.mov":     time.Date(2021, 12, 24, 18, 0, 0, 0, time.UTC),
				"tools/run.sh":  time.Date(2023, 3, 3, 3, 3, 3, 3, time.UTC),
				"notes/now.txt": {},
			}
			writeFile(t, filepath.Join(src, "photo.jpg"), 3000)
			writeFile(t, filepath.Join(src, "video.mov"), 5<<20+1)
			writeFile(t, filepath.Join(src, "tools", "run.sh"), 100)
			writeFile(t, filepath.Join(src, "notes", "now.txt"), 10)
			if err := os.Chmod(filepath.Join(src, "tools", "run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			for rel, w := range when {
				if !w.IsZero() {
					if err := os.Chtimes(filepath.Join(src, filepath.FromSlash(rel)), w, w); err != nil {
						t.Fatal(err)
					}
				}
			}
			if res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp}); res.State != StateDone {
				t.Fatalf("send: %s %q", res.State, res.Err)
			}
			for rel := range when {
				got, err := os.Stat(filepath.Join(recv.DownloadDir(), "project", filepath.FromSlash(rel)))
				if err != nil {
					t.Fatal(err)
				}
				want, _ := os.Stat(filepath.Join(src, filepath.FromSlash(rel)))
				if !got.ModTime().Equal(want.ModTime()) {
					t.Errorf("%s: modified %v, want %v", rel, got.ModTime(), want.ModTime())
				}
				if exec := got.Mode().Perm()&0o111 != 0; runtime.GOOS != "windows" && exec != (rel == "tools/run.sh") {
					t.Errorf("%s: mode %v", rel, got.Mode())
				}
			}
		})
	}
}
