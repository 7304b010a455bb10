package engine

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A file over FAT's 4 GiB sent to a download folder on a FAT32 stick is
// refused with the offer, with why on both sides, and the rest arrives;
// nothing of it is written there. It failed after the offer instead (on a
// fusefat stick: "FAILED big.bin: Not saved: operation not permitted."),
// once its bytes had crossed where the file system then failed them.
// Needs root and a FAT32 mount (the kernel's vfat, else fusefat): it
// skips without them.
func TestFileOverFATLimitIsRefusedWithTheOffer(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	sent, unsubSent := send.Subscribe(1024)
	defer unsubSent()
	src := t.TempDir()
	big := filepath.Join(src, "big.bin")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 5<<30); err != nil { // a sparse file: holes send fast
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(src, "notes.txt"), 1000)
	r := sendWait(t, send, target(recv), []string{big, filepath.Join(src, "notes.txt")}, SendOptions{})
	if r.State != StateDone || r.Verified != 1 || r.Refused != 1 {
		t.Fatalf("result %+v", r)
	}
	const why = "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)."
	for _, side := range []struct {
		name string
		evs  <-chan Event
		dir  Direction
	}{{"receiver", events, Receiving}, {"sender", sent, Sending}} {
		var got string
		for ev := range side.evs {
			if ev.Kind == EventFile && ev.Direction == side.dir && ev.File.Path == "big.bin" {
				got = ev.File.Err
			}
			if ev.Kind == EventResult && ev.Direction == side.dir {
				break
			}
		}
		if got != why {
			t.Errorf("the %s says of big.bin %q, want %q", side.name, got, why)
		}
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if strings.Join(got, " ") != "notes.txt" {
		t.Errorf("the stick holds %q, want notes.txt alone", got)
	}
}

// A name FAT keeps out (a final dot) sent to a download folder on a
// FAT32 stick is saved as Windows would save it, and reported so: the
// kernel's vfat dropped the dot silently while the report said the name
// as sent, and fusefat kept "notes." as it is, which Windows cannot open.
func TestNameOnAFATStickIsSavedAsWindowsWould(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "notes."), 100)
	r := sendWait(t, send, target(recv), []string{filepath.Join(src, "notes.")}, SendOptions{})
	if r.State != StateDone || r.Verified != 1 {
		t.Fatalf("result %+v", r)
	}
	var saved string
	for ev := range events {
		if ev.Kind == EventFile && ev.Direction == Receiving {
			saved = ev.File.SavedAs
		}
		if ev.Kind == EventResult && ev.Direction == Receiving {
			break
		}
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if saved != "notes" || strings.Join(got, " ") != "notes" {
		t.Errorf("saved as %q; the stick holds %q; want notes", saved, got)
	}
}

// A browser's file over FAT's 4 GiB for a download folder on a FAT32 stick
// is refused as its upload is created, with why: it was refused for want
// of space there, or, on a stick with room, failed once written.
func TestBrowserFileOverFATLimitIsRefused(t *testing.T) {
	stick := testutil.FATStick(t)
	e := testEngine(t, Options{DownloadDir: stick})
	endpoint, _ := browserLink(t, e, browserIdle)
	status, _, body := testutil.TusCreate(t, endpoint, "film.mkv", 5<<30)
	const why = "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)."
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), why) {
		t.Errorf("created: %d %q, want refused: %q", status, body, why)
	}
	if status, _, body := testutil.TusCreate(t, endpoint, "notes.txt", 1000); status != http.StatusCreated {
		t.Errorf("a small file: %d %q", status, body)
	}
}

// Files sent to a FAT32 stick arrive whole, their chunks written side by
// side in any order. On fusefat (which mounts the stick where the kernel
// has no vfat) a write past a file's end is refused or misplaced, and
// files arrived wrong while reported verified (a 327,780-byte file saved
// as 132,096 bytes of other data) or failed ("operation not permitted"):
// the partial is now filled with zeros in order first (store's
// Dest.inOrder). Needs root and a FAT32 mount: it skips without them.
func TestFilesOnAFATStickArriveWhole(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	send := testEngine(t, Options{})
	src := t.TempDir()
	var paths []string
	for _, n := range []int{100, 327_780, 5<<20 + 77, 9<<20 + 1} {
		p := filepath.Join(src, fmt.Sprintf("f%d.bin", n))
		writeFile(t, p, n)
		paths = append(paths, p)
	}
	r := sendWait(t, send, target(recv), paths, SendOptions{Streams: 4})
	if r.State != StateDone || r.Verified != len(paths) {
		t.Errorf("result %s %q, %d verified", r.State, r.Err, r.Verified)
	}
	for _, p := range paths {
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(stick, filepath.Base(p)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s on the stick: %d bytes (%v), want the %d sent", filepath.Base(p), len(got), err, len(want))
		}
	}
}

// A transfer cut off part way onto a FAT32 stick resumes there, where it
// failed on fusefat: "the file could not be saved: operation not
// permitted" (its partial, filled whole, is no longer truncated, nor
// written past its end). Needs root and a FAT32 mount: it skips without.
func TestResumeOntoAFATStick(t *testing.T) {
	skipIfShort(t)
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	send := testEngine(t, Options{})
	src := t.TempDir()
	const size = 12 << 20
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	opts := SendOptions{Transport: "tcp"}
	// Interrupted once chunks landed: one interrupted while its partial is
	// filled removes it, and has nothing to resume.
	interruptAfter(t, send, recv, []string{big}, opts, size, func(ev Event) bool {
		return ev.Kind == EventProgress && ev.Direction == Receiving && ev.Progress.Bytes > 0
	})
	res := sendWait(t, send, target(recv), []string{big}, opts)
	if res.State != StateDone || res.Kept == 0 {
		t.Fatalf("resume: %s %q (kept %d), want done with part of the file kept", res.State, res.Err, res.Kept)
	}
	sameTree(t, big, stick)
}

// A folder's folders "A" and "a" sent to a FAT32 stick, which ignores
// letter case, arrive as two folders (the offer's second as "a (1)": see
// TestFolderOfTheOffersFirstSpellingKeepsItsName), each file reported
// where it is: they were merged,
// the files of one reported in a folder the stick does not list
// ("p/a/y.txt") and one renamed beside another of its name ("p/a/x
// (1).txt"). Needs root and a FAT32 mount: it skips without them.
func TestFoldersOfAnotherCaseOnAFATStickStayApart(t *testing.T) {
	stick := testutil.FATStick(t)
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	src := t.TempDir()
	rels := []string{"p/A/x.txt", "p/a/y.txt", "p/a/x.txt"}
	for _, rel := range rels {
		writeFile(t, filepath.Join(src, filepath.FromSlash(rel)), 1000)
	}
	r := sendWait(t, send, target(recv), []string{filepath.Join(src, "p")}, SendOptions{})
	if r.State != StateDone || r.Verified != 3 {
		t.Fatalf("result %s %q, %d verified", r.State, r.Err, r.Verified)
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
	// The offer's first spelling keeps its name ("A" walks before "a").
	want := map[string]string{"p/A/x.txt": "", "p/a/y.txt": "p/a (1)/y.txt", "p/a/x.txt": "p/a (1)/x.txt"}
	for _, rel := range rels {
		if saved[rel] != want[rel] {
			t.Errorf("%s reported saved as %q, want %q", rel, saved[rel], want[rel])
		}
		at := rel
		if saved[rel] != "" {
			at = saved[rel]
		}
		sent, _ := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if got, err := os.ReadFile(filepath.Join(stick, filepath.FromSlash(at))); err != nil || !bytes.Equal(got, sent) {
			t.Errorf("%s on the stick: %d bytes (%v), not the %d of %s", at, len(got), err, len(sent), rel)
		}
	}
	var got []string
	names, err := os.ReadDir(filepath.Join(stick, "p"))
	for _, n := range names {
		got = append(got, n.Name())
	}
	if s := strings.Join(got, " "); err != nil || s != "A a (1)" {
		t.Errorf("p holds %q (%v), want A and a (1)", got, err)
	}
}

// A transfer cancelled here while its file's partial is being filled with
// zeros on a fusefat stick (store's Dest.inOrder) ends there and then:
// the fill stops, and its partial, which holds nothing sent yet, is
// removed. The cancel waited for the whole fill (10.7 s for this file on
// the test's stick, minutes for a file of gigabytes), which then stayed on
// the stick as a partial of its full size. Needs root and a fusefat mount: it skips
// without them, and on the kernel's vfat, which fills nothing.
func TestCancelDuringAFillOnAFATStick(t *testing.T) {
	stick := testutil.FATStick(t)
	if !mountedAs(t, stick, "fuse.fusefat") {
		t.Skip("the stick is not mounted by fusefat, whose partials are filled")
	}
	recv := startReceiver(t, Options{DownloadDir: stick})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	send := testEngine(t, Options{})
	src := t.TempDir()
	const size = 56 << 20
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(stick, "big.bin.partial")
	var largest int64 // the partial's largest size seen
	seen := func() int64 {
		if fi, err := os.Stat(partial); err == nil {
			largest = max(largest, fi.Size())
			return fi.Size()
		}
		return 0
	}
	testutil.WaitFor(t, "the fill to begin", func() bool { return seen() > 0 })
	var id string
	for ev := range events {
		if ev.Direction == Receiving && ev.TransferID != "" {
			id = ev.TransferID
			break
		}
	}
	if err := recv.Cancel(id); err != nil {
		t.Fatal(err)
	}
	var r Result
	for ev := range events {
		seen()
		if ev.Kind == EventResult && ev.Direction == Receiving && ev.Result != nil {
			r = *ev.Result
			break
		}
	}
	<-tr.Done()
	seen()
	if r.State != StateCancelled {
		t.Errorf("the receiver's result: %s %q, want cancelled", r.State, r.Err)
	}
	if largest >= size {
		t.Errorf("the fill ran to its end after the cancel: a partial of %d bytes", largest)
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		t.Errorf("the stick holds %s after the cancel, want nothing", n.Name())
	}
}

// mountedAs reports whether dir is a mount of the file system type typ.
func mountedAs(t *testing.T, dir, typ string) bool {
	t.Helper()
	table, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(table), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == dir {
			return f[2] == typ
		}
	}
	return false
}

// An offer's folders "p/A" and "p/a" on a FAT32 stick, which ignores
// letter case, arrive as "p/A" and "p/a (1)", the offer's first keeping its
// name whichever folder's file lands first: it was the first to land, so
// the streams decided, and one transfer saved "p/a/y.txt" as "p/a
// (1)/y.txt" and the next, the same, "p/A/x.txt" as "p/A (1)/x.txt". Needs
// root and a FAT32 mount: it skips without them.
func TestFolderOfTheOffersFirstSpellingKeepsItsName(t *testing.T) {
	files := []wire.FileEntry{{Path: "p/A/x.txt", Size: 1000}, {Path: "p/a/y.txt", Size: 1001}, {Path: "p/a/x.txt", Size: 1002}}
	for _, order := range [][]uint32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			e := testEngine(t, Options{DownloadDir: testutil.FATStick(t)})
			rx := testReceiverOn(t, e, 64<<10, files)
			data := map[uint32][]byte{}
			for _, i := range order {
				data[i] = randomBytes(int(files[i].Size))
				landAll(t, rx, i, data[i], 0)
				rootOf(t, rx, i, data[i])
			}
			for i, want := range []string{"p/A/x.txt", "p/a (1)/y.txt", "p/a (1)/x.txt"} {
				if got, err := os.ReadFile(filepath.Join(e.DownloadDir(), filepath.FromSlash(want))); err != nil || !bytes.Equal(got, data[uint32(i)]) {
					t.Errorf("%s: %d bytes at %s (%v), want the %d sent", files[i].Path, len(got), want, err, len(data[uint32(i)]))
				}
			}
		})
	}
}

// An offer's names that are one name on a FAT32 or exFAT stick, which
// ignore letter case, arrive apart with the offer's first keeping its name
// whichever lands first: two files ("p/Read.me", "p/READ.ME": the second
// as "p/READ (1).ME"), and a file and a folder ("p/x", "p/X/y": the
// folder, second, as "p/X (1)"; first, it keeps "p/X" and the file is
// "p/x (1)"). It was the first to land, so the streams decided. Where case
// is told apart (the tests' temporary folder) each keeps its name. Needs
// root and the sticks' drivers: their cases skip without them.
func TestNamesOfTheOffersFirstSpellingKeepTheirNames(t *testing.T) {
	for _, c := range []struct {
		files []wire.FileEntry
		want  []string
	}{
		{[]wire.FileEntry{{Path: "p/Read.me", Size: 1000}, {Path: "p/READ.ME", Size: 1001}}, []string{"p/Read.me", "p/READ (1).ME"}},
		{[]wire.FileEntry{{Path: "p/x", Size: 1000}, {Path: "p/X/y", Size: 1001}}, []string{"p/x", "p/X (1)/y"}},
		{[]wire.FileEntry{{Path: "p/X/y", Size: 1000}, {Path: "p/x", Size: 1001}}, []string{"p/X/y", "p/x (1)"}},
		{[]wire.FileEntry{{Path: "Read.me", Size: 70000}, {Path: "READ.ME", Size: 1001}}, []string{"Read.me", "READ (1).ME"}},
		{[]wire.FileEntry{{Path: "x", Size: 1000}, {Path: "X/y", Size: 1001}}, []string{"x", "X (1)/y"}},
	} {
		for _, order := range [][]uint32{{0, 1}, {1, 0}} {
			for _, stick := range caseSticks {
				t.Run(fmt.Sprint(stick.name, c.files[0].Path, order), func(t *testing.T) {
					e := testEngine(t, Options{DownloadDir: stick.dir(t)})
					rx := testReceiverOn(t, e, 64<<10, c.files)
					data := landInOrder(t, rx, c.files, order)
					for i, want := range c.want {
						if stick.name == "cased" {
							want = c.files[i].Path
						}
						got, err := os.ReadFile(filepath.Join(e.DownloadDir(), filepath.FromSlash(want)))
						if err != nil || !bytes.Equal(got, data[uint32(i)]) {
							t.Errorf("%s: %d bytes at %s (%v), want the %d sent", c.files[i].Path, len(got), want, err, len(data[uint32(i)]))
						}
						if saved := rx.savedAs[uint32(i)]; saved != want && (saved != "" || want != c.files[i].Path) {
							t.Errorf("%s reported saved as %q, want %q", c.files[i].Path, saved, want)
						}
					}
				})
			}
		}
	}
}

// A LocalSend app's files whose names are one on a FAT32 stick, which
// ignores letter case ("READ.ME", "Read.me"), arrive apart with the
// offer's first (its names sorted: "READ.ME") keeping its name, whichever
// the app uploads first: it was the first uploaded. Needs root and a FAT32
// mount: it skips without them.
func TestLocalSendNamesOfAnotherCaseOnAFATStick(t *testing.T) {
	for _, first := range []string{"Read.me", "READ.ME"} {
		t.Run(first, func(t *testing.T) {
			e, srv, addr := lsEngine(t, Options{DownloadDir: testutil.FATStick(t)}, LocalSendOptions{})
			res := receivedResult(t, e)
			data := map[string][]byte{"Read.me": []byte("mixed"), "READ.ME": []byte("upper case")}
			other := map[string]string{"Read.me": "READ.ME", "READ.ME": "Read.me"}[first]
			files := []lspeer.SendFile{{Name: first, Data: data[first]}, {Name: other, Data: data[other]}}
			sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "", files, nil)
			if err != nil || sr.PrepareStatus != 200 {
				t.Fatalf("%+v %v", sr, err)
			}
			if r := <-res; r.State != StateDone || r.Verified != 2 {
				t.Fatalf("result %+v", r)
			}
			for name, want := range map[string]string{"READ.ME": "READ.ME", "Read (1).me": "Read.me"} {
				if b, err := os.ReadFile(filepath.Join(e.DownloadDir(), name)); err != nil || !bytes.Equal(b, data[want]) {
					t.Errorf("%s holds %q (%v), want %s's %q", name, b, err, want, data[want])
				}
			}
		})
	}
}

// A browser's files whose names are one on a FAT32 stick, which ignores
// letter case, arrive apart, the first to arrive keeping its name: its page
// sends one file at a time, in the order picked, and lists nothing ahead,
// so no other order is known. Two files ("p/Read.me", "p/READ.ME": "p/READ
// (1).ME") and a file and a folder ("p/x", "p/X/y": "p/X (1)/y"), nothing
// overwritten. Needs root and a FAT32 mount: it skips without them.
func TestBrowserNamesOfAnotherCaseOnAFATStick(t *testing.T) {
	stick := testutil.FATStick(t)
	e := testEngine(t, Options{DownloadDir: stick})
	endpoint, _ := browserLink(t, e, browserIdle)
	sent := []struct{ name, at string }{{"p/Read.me", "p/Read.me"}, {"p/READ.ME", "p/READ (1).ME"}, {"p/x", "p/x"}, {"p/X/y", "p/X (1)/y"}}
	for i, f := range sent {
		data := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
		testutil.TusUpload(t, endpoint, f.name, len(data), data)
		testutil.WaitFor(t, f.name+" saved as "+f.at, func() bool {
			b, err := os.ReadFile(filepath.Join(stick, filepath.FromSlash(f.at)))
			return err == nil && bytes.Equal(b, data)
		})
	}
	for i, f := range sent {
		b, err := os.ReadFile(filepath.Join(stick, filepath.FromSlash(f.at)))
		if err != nil || len(b) != 100+i {
			t.Errorf("%s holds %d bytes (%v), want %s's %d", f.at, len(b), err, f.name, 100+i)
		}
	}
}

// An offer's names that a number given here could take, or that are one
// name on every file system, arrive with each file at a name of its own,
// the same whichever lands first, nothing overwritten, on a FAT32 and an
// exFAT stick (which ignore letter case) and on a folder that tells case
// apart:
//   - a number never takes a name the offer holds, in any case: with
//     "p/Read.me", "p/READ.ME" and "p/Read (1).me" the second arrives as
//     "p/READ (2).ME" where case is ignored, and the third keeps its name;
//     a folder "p/a" as "p/a (2)" beside the offer's "p/a (1)"; a second
//     "p/a.txt" as "p/a (2).txt". The number took the name where it landed
//     first ("p/Read (1).me" saved as "p/Read (1) (1).me", or "p/a/y" in
//     the offer's "p/a (1)"), on every file system for a name sent twice;
//   - a file and a folder of exactly one name ("p/x", "p/x/y"): the offer's
//     first keeps it and the other is numbered ("p/x (2)/y", past the
//     offer's "p/x (1)"), where the first to land kept it;
//   - a name sent twice ("p/a.txt" twice) is received twice, the offer's
//     second copy numbered ("p/a (2).txt", past the offer's "p/A (1).TXT")
//     whichever lands first (TestCopiesOfANameAreNumberedInTheOffersOrder).
//
// Every order the files can land in is tried. Needs root and the sticks'
// drivers: their cases skip without them.
func TestOfferedNamesStayApartWhateverLandsFirst(t *testing.T) {
	for _, c := range []struct {
		files []wire.FileEntry
		folds []string // where saved on a stick; "a|b": either, the copies apart
		cased []string // where case is told apart; nil: as offered
	}{
		{[]wire.FileEntry{{Path: "p/Read.me", Size: 1000}, {Path: "p/READ.ME", Size: 1001}, {Path: "p/Read (1).me", Size: 1002}},
			[]string{"p/Read.me", "p/READ (2).ME", "p/Read (1).me"}, nil},
		{[]wire.FileEntry{{Path: "p/A/x", Size: 1000}, {Path: "p/a/y", Size: 1001}, {Path: "p/a (1)/z", Size: 1002}},
			[]string{"p/A/x", "p/a (2)/y", "p/a (1)/z"}, nil},
		{[]wire.FileEntry{{Path: "p/x", Size: 1000}, {Path: "p/x/y", Size: 1001}, {Path: "p/x (1)", Size: 1002}},
			[]string{"p/x", "p/x (2)/y", "p/x (1)"}, []string{"p/x", "p/x (2)/y", "p/x (1)"}},
		{[]wire.FileEntry{{Path: "p/x/y", Size: 1000}, {Path: "p/X (1)", Size: 1001}, {Path: "p/x", Size: 1002}},
			[]string{"p/x/y", "p/X (1)", "p/x (2)"}, []string{"p/x/y", "p/X (1)", "p/x (2)"}}, // a number passes "X (1)" on every file system
		{[]wire.FileEntry{{Path: "x", Size: 70000}, {Path: "x/y", Size: 1001}, {Path: "X (1)", Size: 1002}},
			[]string{"x", "x (2)/y", "X (1)"}, []string{"x", "x (2)/y", "X (1)"}},
		{[]wire.FileEntry{{Path: "p/a.txt", Size: 1000}, {Path: "p/a.txt", Size: 1001}, {Path: "p/A (1).TXT", Size: 1002}},
			[]string{"p/a.txt", "p/a (2).txt", "p/A (1).TXT"}, []string{"p/a.txt", "p/a (2).txt", "p/A (1).TXT"}},
	} {
		for _, order := range [][]uint32{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			for _, stick := range caseSticks {
				t.Run(fmt.Sprint(stick.name, c.files[0].Path, c.files[2].Path, order), func(t *testing.T) {
					want := c.folds
					if stick.name == "cased" {
						want = c.cased
					}
					e := testEngine(t, Options{DownloadDir: stick.dir(t)})
					rx := testReceiverOn(t, e, 64<<10, c.files)
					data := landInOrder(t, rx, c.files, order)
					checkSavedApart(t, rx, c.files, want, data)
				})
			}
		}
	}
}

// An offer that names one file three times ("p/a.txt": the receiver takes
// up to core.MaxSameName copies) saves its first copy under the name and
// numbers the others in the offer's order, whichever lands first: "p/a
// (1).txt" is the second copy's, "p/a (2).txt" the third's, past the names
// the folder held before ("p/a.txt" and "p/a (2).txt" there: "p/a
// (1).txt", "p/a (3).txt", "p/a (4).txt", those left as they were), and
// past another spelling's name where case is ignored ("p/Read.me", then
// "p/READ.ME" twice: "p/READ (1).ME", "p/READ (2).ME" on a stick). The copy
// that landed first kept the name, and each later one took the first
// number free. Every order they can land in, a small file (one chunk,
// created without a name) and a large one among them, on a FAT32 and an
// exFAT stick and a folder that tells case apart. Needs root and the
// sticks' drivers: their cases skip without them.
func TestCopiesOfANameAreNumberedInTheOffersOrder(t *testing.T) {
	three := func(a, b, c string) []wire.FileEntry {
		return []wire.FileEntry{{Path: a, Size: 1000}, {Path: b, Size: 70000}, {Path: c, Size: 1001}}
	}
	for _, c := range []struct {
		files        []wire.FileEntry
		there        []string // in the folder before
		folds, cased []string
	}{
		{three("p/a.txt", "p/a.txt", "p/a.txt"), nil,
			[]string{"p/a.txt", "p/a (1).txt", "p/a (2).txt"}, []string{"p/a.txt", "p/a (1).txt", "p/a (2).txt"}},
		{three("p/a.txt", "p/a.txt", "p/a.txt"), []string{"p/a.txt", "p/a (2).txt"},
			[]string{"p/a (1).txt", "p/a (3).txt", "p/a (4).txt"}, []string{"p/a (1).txt", "p/a (3).txt", "p/a (4).txt"}},
		{three("p/Read.me", "p/READ.ME", "p/READ.ME"), nil,
			[]string{"p/Read.me", "p/READ (1).ME", "p/READ (2).ME"}, []string{"p/Read.me", "p/READ.ME", "p/READ (1).ME"}},
	} {
		for _, order := range [][]uint32{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			for _, stick := range caseSticks {
				t.Run(fmt.Sprint(stick.name, c.files[2].Path, len(c.there), order), func(t *testing.T) {
					want := c.folds
					if stick.name == "cased" {
						want = c.cased
					}
					e := testEngine(t, Options{DownloadDir: stick.dir(t)})
					for _, name := range c.there {
						at := filepath.Join(e.DownloadDir(), filepath.FromSlash(name))
						if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(at, []byte(name), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					rx := testReceiverOn(t, e, 64<<10, c.files)
					data := landInOrder(t, rx, c.files, order)
					checkSavedApart(t, rx, c.files, want, data)
					for _, name := range c.there {
						if b, err := os.ReadFile(filepath.Join(e.DownloadDir(), filepath.FromSlash(name))); err != nil || string(b) != name {
							t.Errorf("%s holds %q (%v), want what it held before", name, b, err)
						}
					}
				})
			}
		}
	}
}

// caseSticks are the download folders the tests of names of another case
// run on: a FAT32 and an exFAT stick, which ignore letter case (they skip
// without root or their drivers), and a folder that tells case apart.
var caseSticks = []struct {
	name string
	dir  func(testing.TB) string
}{{"fat", testutil.FATStick}, {"exfat", testutil.ExFATStick}, {"cased", func(t testing.TB) string { return t.TempDir() }}}

// landInOrder lands random data for each of files, whole with its root, in
// order, and returns the data.
func landInOrder(t *testing.T, rx *receiver, files []wire.FileEntry, order []uint32) map[uint32][]byte {
	t.Helper()
	data := map[uint32][]byte{}
	for _, i := range order {
		data[i] = randomBytes(int(files[i].Size))
		chunks := []int{}
		for off := 0; off < len(data[i]); off += 64 << 10 {
			chunks = append(chunks, off/(64<<10))
		}
		landAll(t, rx, i, data[i], chunks...)
		rootOf(t, rx, i, data[i])
	}
	return data
}

// checkSavedApart checks that each of files was saved, with its data, where
// want says (the name offered where want is nil; "a|b": at either of two
// names, the copies of one name each at its own), and reported so.
func checkSavedApart(t *testing.T, rx *receiver, files []wire.FileEntry, want []string, data map[uint32][]byte) {
	t.Helper()
	at := map[string]int{} // name -> the file saved there
	for i, f := range files {
		names := []string{f.Path}
		if want != nil {
			names = strings.Split(want[i], "|")
		}
		saved := rx.savedAs[uint32(i)]
		if saved == "" {
			saved = f.Path
		}
		if !slices.Contains(names, saved) {
			t.Errorf("%s reported saved as %q, want %q", f.Path, saved, names)
			continue
		}
		if j, ok := at[saved]; ok {
			t.Errorf("%s and %s both reported saved as %q", files[j].Path, f.Path, saved)
		}
		at[saved] = i
		got, err := os.ReadFile(filepath.Join(rx.DestDir, filepath.FromSlash(saved)))
		if err != nil || !bytes.Equal(got, data[uint32(i)]) {
			t.Errorf("%s: %d bytes at %s (%v), want the %d sent", f.Path, len(got), saved, err, len(data[uint32(i)]))
		}
	}
}

// An offer's empty folder and a folder of its files that are one name where
// letter case is ignored ("p/Docs" empty, "p/DOCS/a.txt") arrive apart, the
// folder of files keeping its name whichever file lands first, as
// store.Twins's rule has it: the offer lists its empty folders after its
// files, and they are made after every file is saved (makeFolders), so an
// empty one never takes the name from one with files, on a FAT32 or exFAT
// stick or a folder that tells case apart; and an empty folder that reads
// as numbered ("p/a (1)") keeps its name from a number given to another
// ("p/a" beside "p/A": "p/a (2)"), where that folder took it and the empty
// one was merged into it. Needs root and the sticks' drivers: their cases
// skip without them.
func TestEmptyFolderNeverTakesTheNameOfOneWithFiles(t *testing.T) {
	for _, c := range []struct {
		files        []wire.FileEntry
		empty        []string
		folds, cased []string // where the files are saved
		emptyAt      []string // where the empty folders are made, on a stick
	}{
		{[]wire.FileEntry{{Path: "p/DOCS/a.txt", Size: 1000}, {Path: "p/docs/b.txt", Size: 1001}}, []string{"p/Docs"},
			[]string{"p/DOCS/a.txt", "p/docs (1)/b.txt"}, nil, []string{"p/Docs (2)"}},
		{[]wire.FileEntry{{Path: "p/x", Size: 1000}, {Path: "p/DOCS/a.txt", Size: 1001}}, []string{"p/X", "p/Docs", "p/DOCS/e"},
			[]string{"p/x", "p/DOCS/a.txt"}, nil, []string{"p/X (1)", "p/Docs (1)", "p/DOCS/e"}},
		{[]wire.FileEntry{{Path: "p/A/x", Size: 1000}, {Path: "p/a/y", Size: 1001}}, []string{"p/a (1)"},
			[]string{"p/A/x", "p/a (2)/y"}, nil, []string{"p/a (1)"}},
	} {
		for _, order := range [][]uint32{{0, 1}, {1, 0}} {
			for _, stick := range caseSticks {
				t.Run(fmt.Sprint(stick.name, c.files[0].Path, c.empty[0], order), func(t *testing.T) {
					want, emptyAt := c.folds, c.emptyAt
					if stick.name == "cased" {
						want, emptyAt = c.cased, c.empty
					}
					e := testEngine(t, Options{DownloadDir: stick.dir(t)})
					rx := testReceiverOfFolders(t, e, 64<<10, c.files, c.empty)
					data := landInOrder(t, rx, c.files, order)
					if err := rx.makeFolders(context.Background()); err != nil {
						t.Fatal(err)
					}
					checkSavedApart(t, rx, c.files, want, data)
					for i, at := range emptyAt {
						es, err := os.ReadDir(filepath.Join(rx.DestDir, filepath.FromSlash(at)))
						if err != nil || len(es) != 0 {
							t.Errorf("empty folder %s: %s holds %d (%v), want an empty folder", c.empty[i], at, len(es), err)
						}
						dir, name := path.Split(at)
						if es, err := os.ReadDir(filepath.Join(rx.DestDir, filepath.FromSlash(dir))); err != nil || !slices.ContainsFunc(es, func(e os.DirEntry) bool { return e.Name() == name }) {
							t.Errorf("empty folder %s: %s does not list %s (%v)", c.empty[i], dir, name, err)
						}
					}
				})
			}
		}
	}
}
