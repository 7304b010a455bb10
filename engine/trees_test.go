package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/lspeer"
)

// Issue 30: no number of files a user can reach is refused: an offer of
// 150,000 files (over the 100,000 the receiver took before) is accepted,
// its parts arriving as a sender writes them.
func TestOfferOfManyFilesIsAccepted(t *testing.T) {
	const n = 110_000
	recv := testEngine(t, Options{Accept: AcceptAll})
	var accepted bool
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: n})
		for start := 0; start < n; start += 2048 {
			files := make([]wire.FileEntry, 0, 2048)
			for i := start; i < min(start+2048, n); i++ {
				files = append(files, wire.FileEntry{Path: fmt.Sprintf("photos/%03d/img-%06d.jpg", i/1000, i)})
			}
			if p.ctl.send(&wire.OfferFiles{Start: start, Files: files}) != nil {
				return
			}
		}
		d, err := expect[*wire.Decision](p.ctl.recv()) // however long the receiver takes
		accepted = err == nil && d.Accept
		p.conn.Close(nil) // the session ends here, not at runRaw's bound for a stuck one
	})
	if !accepted {
		t.Fatal("an offer of 110,000 files was not accepted")
	}
	if held := recv.admit.HeldManifests(); held != 0 {
		t.Errorf("the ended session still holds %d bytes of manifest budget", held)
	}
}

// Issue 30: what a real tree holds that Ferry does not carry is said, not
// dropped silently: symbolic links (not followed) and devices; empty files
// and empty folders are sent.
func TestManifestSaysWhatItSkips(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "tree")
	for _, d := range []string{"src/a", "empty", "nested/empty/inner"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "src/a/main.go"), 10)
	writeFile(t, filepath.Join(root, "src/empty.txt"), 0)
	if err := os.Symlink("a/main.go", filepath.Join(root, "src/link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	m, skipped, err := buildManifestSkipping([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.files {
		got = append(got, f.Path)
	}
	slices.Sort(got)
	if want := []string{"tree/src/a/main.go", "tree/src/empty.txt"}; !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
	if skipped.Symlinks != 2 || skipped.EmptyFolders != 0 || skipped.Other != 0 {
		t.Errorf("skipped %+v, want 2 symbolic links", skipped)
	}
	// Empty folders are offered, the deepest of each branch only: making
	// it makes the folders above.
	if want := []string{"tree/empty", "tree/nested/empty/inner"}; !slices.Equal(m.folders, want) {
		t.Errorf("empty folders %q, want %q", m.folders, want)
	}
	if len(skipped.Examples) == 0 || len(skipped.Examples) > maxSkippedExamples {
		t.Errorf("examples %v", skipped.Examples)
	}
}

// The words the CLI and the app show for what a send skipped.
func TestSkippedSummary(t *testing.T) {
	for _, c := range []struct {
		s     SkippedInfo
		want  string
		count int
	}{
		{SkippedInfo{}, "", 0},
		{SkippedInfo{Symlinks: 1}, "1 symbolic link (not followed)", 1},
		{SkippedInfo{Symlinks: 2, EmptyFolders: 1}, "2 symbolic links (not followed), 1 empty folder", 3},
		{SkippedInfo{EmptyFolders: 3, Other: 1}, "3 empty folders, 1 device, socket or pipe", 4},
		{SkippedInfo{Symlinks: 1, EmptyFolders: 1, Other: 12}, "1 symbolic link (not followed), 1 empty folder, 12 devices, sockets or pipes", 14},
	} {
		if got := c.s.Summary(); got != c.want {
			t.Errorf("%+v: Summary() = %q, want %q", c.s, got, c.want)
		}
		if got := c.s.Count(); got != c.count {
			t.Errorf("%+v: Count() = %d, want %d", c.s, got, c.count)
		}
	}
}

// TestNamesOnlyWindowsRefuses: between two Linux or Mac devices a name
// that only Windows keeps out ("Meeting: notes.md", "what?.txt", "aux.c",
// a final dot) arrives under that very name, whole files and large ones
// alike; it is refused, by name, only where the receiver is Windows.
func TestNamesOnlyWindowsRefuses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a Windows receiver refuses these names (engine/store: TestBadNamesRefused)")
	}
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{ChunkSize: 1 << 20})
	src := filepath.Join(t.TempDir(), "notes")
	for _, name := range []string{"Meeting: notes.md", "what?.txt", "src/aux.c", "CON", "v2.", `a<b>"c"|d*`} {
		writeFile(t, filepath.Join(src, filepath.FromSlash(name)), 100)
	}
	writeFile(t, filepath.Join(src, "big: one.bin"), 3<<20) // several chunks: a .partial while it arrives
	r := sendWait(t, send, target(recv), []string{src}, SendOptions{})
	if r.State != StateDone || r.Verified != 7 || r.Refused != 0 {
		t.Fatalf("result %+v", r)
	}
	if n := sameTree(t, src, recv.DownloadDir()); n != 7 {
		t.Fatalf("%d files arrived", n)
	}
	noPartials(t, recv.DownloadDir())
}

// TestBackslashInANameSavedAsUnderscore: a file whose name holds a
// backslash (legal on Linux and macOS: "a\\b.txt"), or in a folder whose
// name does, arrives from a Ferry device and from a LocalSend app with "_"
// for it, reported as saved as that, as a browser's does; both refused it
// ("a file name was refused: a\\b.txt: backslash not allowed"), LocalSend's
// sender heard only "declined".
func TestBackslashInANameSavedAsUnderscore(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no backslash in a name here")
	}
	recv := startReceiver(t, Options{})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "notes")
	writeFile(t, filepath.Join(src, `a\b.txt`), 100)
	writeFile(t, filepath.Join(src, `x\y`, "z.txt"), 100)
	r := sendWait(t, send, target(recv), []string{src}, SendOptions{})
	if r.State != StateDone || r.Verified != 2 || r.Refused != 0 {
		t.Fatalf("result %+v", r)
	}
	saved := map[string]string{}
	for ev := range events {
		if ev.Kind == EventFile && ev.Direction == Receiving {
			saved[ev.File.Path] = ev.File.SavedAs
		}
		if ev.Kind == EventResult && ev.Direction == Receiving {
			break
		}
	}
	want := map[string]string{`notes/a\b.txt`: "notes/a_b.txt", `notes/x\y/z.txt`: "notes/x_y/z.txt"}
	if fmt.Sprint(saved) != fmt.Sprint(want) {
		t.Errorf("saved as %v, want %v", saved, want)
	}
	for _, name := range want {
		if _, err := os.Stat(filepath.Join(recv.DownloadDir(), filepath.FromSlash(name))); err != nil {
			t.Error(err)
		}
	}

	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	res := receivedResult(t, e)
	sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: `a\b.txt`, Data: []byte("hello")}}, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("LocalSend: %+v %v", sr, err)
	}
	if r := <-res; r.State != StateDone || r.Verified != 1 {
		t.Fatalf("LocalSend result %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(e.DownloadDir(), "a_b.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("LocalSend: saved %q, %v", b, err)
	}
}

// A name holding a character that shows nothing ("report\u200b.pdf", a
// zero-width space) is saved without it, so it clashes with the
// "report.pdf" there and arrives numbered, reported as saved as that: it
// was saved beside it, two files that look the same in a file manager.
func TestInvisibleCharacterInANameIsDropped(t *testing.T) {
	recv := startReceiver(t, Options{})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	writeFile(t, filepath.Join(recv.DownloadDir(), "report.pdf"), 10)
	send := testEngine(t, Options{})
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "report\u200b.pdf"), 100)
	writeFile(t, filepath.Join(src, "re\u00adsume\u2060.txt"), 100)
	r := sendWait(t, send, target(recv), []string{filepath.Join(src, "report\u200b.pdf"), filepath.Join(src, "re\u00adsume\u2060.txt")}, SendOptions{})
	if r.State != StateDone || r.Verified != 2 || r.Refused != 0 {
		t.Fatalf("result %+v", r)
	}
	saved := map[string]string{}
	for ev := range events {
		if ev.Kind == EventFile && ev.Direction == Receiving {
			saved[ev.File.Path] = ev.File.SavedAs
		}
		if ev.Kind == EventResult && ev.Direction == Receiving {
			break
		}
	}
	want := map[string]string{"report\u200b.pdf": "report (1).pdf", "re\u00adsume\u2060.txt": "resume.txt"}
	if fmt.Sprint(saved) != fmt.Sprint(want) {
		t.Errorf("saved as %q, want %q", saved, want)
	}
	names, err := os.ReadDir(recv.DownloadDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if fmt.Sprint(got) != "[report (1).pdf report.pdf resume.txt]" {
		t.Errorf("the folder holds %q", got)
	}
}

// A tree deeper than an offer's path may be (over 4096 bytes, or 64
// levels) is sent without the files down there, which are said as
// skipped: such a path ended the whole send with a protocol error on both
// sides ("Protocol violation: offer files: file 1 path too long"), and the
// receiver would refuse one over 64 levels anyway.
func TestTreeTooDeepToOfferLeavesOutOnlyWhatIsTooDeep(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	writeFile(t, filepath.Join(tree, "shallow.txt"), 5)
	// 30 folders of 200 bytes: 6000 bytes down, more than a path may be
	// here too (PATH_MAX), so made one folder at a time.
	r, err := os.OpenRoot(tree)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200)
	for range 30 {
		if err := r.Mkdir(long, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := r.OpenRoot(long)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		r = next
	}
	if err := r.WriteFile("deep.txt", []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Mkdir("emptydeep", 0o755); err != nil {
		t.Fatal(err)
	}
	r.Close()
	levels := filepath.Join(tree, strings.Repeat("l/", 70))
	if err := os.MkdirAll(levels, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(levels, "f"), 1)

	m, skipped, err := buildManifestSkipping([]string{tree})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.files {
		got = append(got, f.Path)
	}
	if want := []string{"tree/shallow.txt"}; !slices.Equal(got, want) {
		t.Errorf("offered %d files %.200q, want %q", len(got), got, want)
	}
	if len(m.folders) != 0 {
		t.Errorf("offered empty folders %.200q, want none", m.folders)
	}
	if skipped.TooDeep != 3 || skipped.Count() != 3 {
		t.Errorf("skipped %d too deep, %d in all, want 3", skipped.TooDeep, skipped.Count())
	}
	if s := skipped.Summary(); !strings.Contains(s, "3 files or folders nested too deep") {
		t.Errorf("summary %q", s)
	}
	for _, f := range m.files {
		if err := store.ValidatePath(f.Path); err != nil {
			t.Errorf("offered %q, which a receiver refuses: %v", f.Path, err)
		}
	}
}

// TestNameRefusalArrivesWhole: an offer refused whole for a name reaches
// the sender with why, however long the name: the name is shortened in
// the middle ("Projects/aaa…/ffff/notes\x01.txt") to leave room for it.
// The reason was cut at 200 bytes, and a path of that length left the
// sender "A file name was refused: "Projects/aaaa…/e." (of a path 72
// levels deep, "72 levels deep, limit.").
func TestNameRefusalArrivesWhole(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no control character in a name here")
	}
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "Projects")
	deep := src
	for i := range 6 {
		deep = filepath.Join(deep, strings.Repeat(string(rune('a'+i)), 40))
	}
	writeFile(t, filepath.Join(deep, "notes\x01.txt"), 10)
	for _, tr := range []string{"tcp", "quic"} {
		r := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tr})
		if r.State == StateDone || !strings.HasSuffix(r.Err, `notes\x01.txt": control character U+0001 not allowed.`) {
			t.Errorf("%s: %s %q, want refused with the file's name and why", tr, r.State, r.Err)
		}
	}

	// A peer's path deeper than this device takes, every level a name.
	path := strings.Repeat("level/", 71) + "f"
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offer(wire.FileEntry{Path: path, Size: 1})
		_, err := expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second))
		var re *wire.RemoteError
		if !errors.As(err, &re) || re.Code != wire.CodeBadName || !strings.HasSuffix(re.Reason, "/level/f: 72 levels deep, limit 64") {
			t.Errorf("the refusal reads %v, want it to end with the depth and the limit", err)
		}
	})
}
