package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/wire"
)

// immutable makes dir immutable (chattr +i keeps even root from creating
// or removing a name in it, as a program holding a file open does on
// Windows) until the returned func or the test's end; it skips the test
// where that cannot be done.
func immutable(t *testing.T, dir string) (undo func()) {
	t.Helper()
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make a folder immutable here: %v %s", err, out)
	}
	undo = func() {
		if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
			t.Errorf("chattr -i: %v %s", err, out)
		}
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	return undo
}

// listing returns the unfinished transfers that list the partial name in
// dir.
func listing(e *Engine, dir, name string) []PartialTransfer {
	var out []PartialTransfer
	for _, p := range e.Partials() {
		if filepath.Clean(p.Dest) == filepath.Clean(dir) && slices.Contains(p.Partials, name) {
			out = append(out, p)
		}
	}
	return out
}

// discardAll discards every unfinished transfer e lists, and fails the test
// if one cannot be.
func discardAll(t *testing.T, e *Engine) {
	t.Helper()
	for _, p := range e.Partials() {
		if err := e.DiscardPartial(p.Key); err != nil {
			t.Fatalf("discard %s: %v", p.Key, err)
		}
	}
	if ps := e.Partials(); len(ps) != 0 {
		t.Errorf("listed after discarding: %+v", ps)
	}
}

// interruptedBig leaves a 48 MB big.bin half received in recv's download
// folder (big.bin.partial) and returns its source.
func interruptedBig(t *testing.T, send, recv *Engine) string {
	t.Helper()
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "tcp", 48<<20)
	if l := listing(recv, recv.DownloadDir(), "big.bin.partial"); len(l) != 1 {
		t.Fatalf("the interrupted transfer: %+v", recv.Partials())
	}
	return big
}

// TestUnreusablePartialThatCannotBeRemovedStaysListed: a send of the same
// files finds nothing of the partial reusable (every chunk changed on
// disk) and cannot remove it (on Windows another program has it open;
// here the folder is immutable): it stays listed, to be discarded again
// and aged out, and goes once the same file is saved. It was left beside
// the new file, listed nowhere.
func TestUnreusablePartialThatCannotBeRemovedStaysListed(t *testing.T) {
	for _, then := range []string{"discarded", "saved"} {
		t.Run(then, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			dl := recv.DownloadDir()
			big := interruptedBig(t, send, recv)
			part := filepath.Join(dl, "big.bin.partial")
			f, err := os.OpenFile(part, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, 48<<20), 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			// The folder turns immutable once the offer was let in (it is
			// refused whole when it arrives to such a folder): the
			// session meets it removing the partial.
			recv.writable = func(string) error { return nil }
			undo := immutable(t, dl)
			got := receivedResult(t, recv)
			if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State == StateDone {
				t.Fatalf("saved into an immutable folder: %+v", res)
			}
			<-got // the receiver's session ended (its cleanup done)
			if _, err := os.Stat(part); err != nil {
				t.Fatalf("the partial: %v", err)
			}
			if l := listing(recv, dl, "big.bin.partial"); len(l) != 1 || !l[0].Unremoved || l[0].OnDisk < 48<<20 {
				t.Fatalf("the partial that could not be removed: listed as %+v", recv.Partials())
			}
			undo()
			if then == "discarded" {
				discardAll(t, recv)
			} else {
				got := receivedResult(t, recv)
				if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State != StateDone {
					t.Fatalf("%s %q", res.State, res.Err)
				}
				<-got
				sameTree(t, big, dl)
				if ps := recv.Partials(); len(ps) != 0 {
					t.Errorf("listed once the file was saved: %+v", ps)
				}
			}
			if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the partial at the end: %v", err)
			}
		})
	}
}

// TestStalePartialThatCannotBeRemovedStaysListed: a resume state that no
// longer fits the offer (begun in another download folder, or damaged)
// goes, and the partials it named that cannot be removed stay listed,
// to be discarded again and aged out. They were left in the folder,
// listed nowhere.
func TestStalePartialThatCannotBeRemovedStaysListed(t *testing.T) {
	t.Run("another folder", func(t *testing.T) {
		recv := startReceiver(t, Options{})
		send := testEngine(t, Options{})
		first := recv.DownloadDir()
		big := interruptedBig(t, send, recv)
		second := t.TempDir()
		if err := recv.SetDownloadDir(second); err != nil {
			t.Fatal(err)
		}
		undo := immutable(t, first)
		got := receivedResult(t, recv)
		if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State != StateDone {
			t.Fatalf("%s %q", res.State, res.Err)
		}
		<-got
		sameTree(t, big, second)
		if l := listing(recv, first, "big.bin.partial"); len(l) != 1 || !l[0].Unremoved || l[0].OnDisk < 48<<20 {
			t.Fatalf("the partial left in the first folder: listed as %+v", recv.Partials())
		}
		undo()
		discardAll(t, recv)
		if ents, _ := os.ReadDir(first); len(ents) != 0 {
			t.Errorf("the first folder still holds %v", ents)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		recv := startReceiver(t, Options{})
		send := testEngine(t, Options{})
		dl := recv.DownloadDir()
		big := interruptedBig(t, send, recv)
		key := recv.Partials()[0].Key
		if err := os.WriteFile(filepath.Join(recv.resume.Path(), key+".json"), []byte("{garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		recv.writable = func(string) error { return nil } // as above: immutable once the offer was let in
		undo := immutable(t, dl)
		got := receivedResult(t, recv)
		if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State == StateDone {
			t.Fatalf("saved into an immutable folder: %+v", res)
		}
		<-got
		if l := listing(recv, dl, "big.bin.partial"); len(l) != 1 || !l[0].Unremoved {
			t.Fatalf("the partial of the damaged state: listed as %+v", recv.Partials())
		}
		undo()
		discardAll(t, recv)
		if ents, _ := os.ReadDir(dl); len(ents) != 0 {
			t.Errorf("the folder still holds %v", ents)
		}
	})
}

// unremovedReceiver is createReceiver with a connection (whose device the
// partials that cannot be removed are listed under) and its folder.
func unremovedReceiver(t *testing.T, a []byte) *receiver {
	t.Helper()
	rx := createReceiver(t, a, nil)
	rx.c, _ = newPipeConns(identity.DeviceID{}, identity.DeviceID{})
	rx.DestDir = rx.Dest.Dir()
	return rx
}

// TestFailedFilesPartialThatCannotBeRemovedStaysListed: a file that fails
// (here an I/O error; a verify failure alike) loses its partial, and one
// that cannot be removed (on Windows another program has it open; here
// the folder is immutable) stays listed, to be discarded again and aged
// out. The snapshot lists no failed file, so it stayed in the folder,
// listed nowhere.
func TestFailedFilesPartialThatCannotBeRemovedStaysListed(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := unremovedReceiver(t, a)
	landAll(t, rx, 0, a, 0)
	f := fileOf(t, rx, 0)
	undo := immutable(t, filepath.Join(rx.DestDir, "d"))
	rx.resolve(f, false, "", wire.CodeIO, "the disk failed")
	if _, err := os.Stat(filepath.Join(rx.DestDir, "d", "a.bin.partial")); err != nil {
		t.Fatalf("the partial: %v", err)
	}
	if l := listing(rx.e, rx.DestDir, "d/a.bin.partial"); len(l) != 1 || !l[0].Unremoved {
		t.Fatalf("the failed file's partial that could not be removed: listed as %+v", rx.e.Partials())
	}
	undo()
	discardAll(t, rx.e)
	if left, _ := filepath.Glob(filepath.Join(rx.DestDir, "d", "*")); len(left) != 0 {
		t.Errorf("left in the destination: %v", left)
	}
}

// TestFailedFilesPartialWithResumeOffIsSaid: with resume off, a failed
// file's partial that cannot be removed is what a session's is then
// (keepOrSayUnremoved): named in a warning, and nothing is written into
// the resume folder, which --no-resume keeps no state in. It was listed as
// unremoved, as with resume on, while the same partial left at the
// session's end was only said.
func TestFailedFilesPartialWithResumeOffIsSaid(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := unremovedReceiver(t, a)
	rx.e.opts.DisableResume = true
	var logged lockedBuffer
	rx.e.log = slog.New(slog.NewTextHandler(&logged, nil))
	landAll(t, rx, 0, a, 0)
	part := filepath.Join(rx.DestDir, "d", "a.bin.partial")
	immutable(t, filepath.Dir(part))
	rx.resolve(fileOf(t, rx, 0), false, "", wire.CodeIO, "the disk failed")
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("the partial: %v", err)
	}
	if log := logged.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, part) {
		t.Errorf("the log says %q, want a warning naming %s", log, part)
	}
	if ps := rx.e.Partials(); len(ps) != 0 {
		t.Errorf("listed with resume off: %+v", ps)
	}
	if ents, _ := os.ReadDir(rx.e.resume.Path()); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !strings.HasPrefix(e.Name(), ".") }) {
		t.Errorf("in the resume folder with resume off: %v", ents)
	}
}

// TestPartialOfAFileResolvedWhileCreatedThatCannotBeRemovedStaysListed: a
// file that fails while its partial is being created loses the new
// partial, and one that cannot be removed stays listed, as a failed
// file's does. It stayed in the folder, listed nowhere.
func TestPartialOfAFileResolvedWhileCreatedThatCannotBeRemovedStaysListed(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := unremovedReceiver(t, a)
	var undo func()
	rx.creating = func(f *rxFile) {
		undo = immutable(t, filepath.Join(rx.DestDir, "d"))
		rx.resolve(f, false, "", wire.CodeIO, "cancelled meanwhile")
	}
	landAll(t, rx, 0, a, 0)
	if undo == nil {
		t.Fatal("no partial was created")
	}
	if _, err := os.Stat(filepath.Join(rx.DestDir, "d", "a.bin.partial")); err != nil {
		t.Fatalf("the partial: %v", err)
	}
	if l := listing(rx.e, rx.DestDir, "d/a.bin.partial"); len(l) != 1 || !l[0].Unremoved {
		t.Fatalf("the partial that could not be removed: listed as %+v", rx.e.Partials())
	}
	undo()
	discardAll(t, rx.e)
	if left, _ := filepath.Glob(filepath.Join(rx.DestDir, "d", "*")); len(left) != 0 {
		t.Errorf("left in the destination: %v", left)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAgeOutThatCannotRemoveAPartialSaysSo: the age limit's clean
// (CleanPartials) that cannot remove a partial keeps its transfer listed,
// to try again, and logs a warning that says why; it said nothing.
func TestAgeOutThatCannotRemoveAPartialSaysSo(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := unremovedReceiver(t, a)
	landAll(t, rx, 0, a, 0)
	f := fileOf(t, rx, 0)
	undo := immutable(t, filepath.Join(rx.DestDir, "d"))
	rx.resolve(f, false, "", wire.CodeIO, "the disk failed")
	var logged lockedBuffer
	rx.e.log = slog.New(slog.NewTextHandler(&logged, nil))
	if n := rx.e.CleanPartials(-time.Hour); n != 0 { // below zero: every one is past it
		t.Errorf("CleanPartials discarded %d, want 0", n)
	}
	if l := listing(rx.e, rx.DestDir, "d/a.bin.partial"); len(l) != 1 {
		t.Fatalf("after an age-out that could not remove it: listed as %+v", rx.e.Partials())
	}
	if log := logged.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "could not be discarded") ||
		!strings.Contains(log, ErrPartialNotRemoved.Error()) {
		t.Errorf("the log says %q, want a warning that the transfer could not be discarded and why", log)
	}
	undo()
	if n := rx.e.CleanPartials(-time.Hour); n != 1 {
		t.Errorf("CleanPartials once it can: %d discarded, want 1", n)
	}
	if ps := rx.e.Partials(); len(ps) != 0 {
		t.Errorf("listed after the age-out: %+v", ps)
	}
}

// TestPartialLeftWithoutResumeThatCannotBeRemoved: a session that ends
// without resume state (an offer that names no manifest; resume off)
// removes its partials, and one that cannot be removed stays listed as a
// failed file's does or, with resume off, where nothing could list it, is
// named in a warning. Its removal's error was ignored: it stayed in the
// folder, listed nowhere and unsaid.
func TestPartialLeftWithoutResumeThatCannotBeRemoved(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "no manifest"
		if off {
			name = "resume off"
		}
		t.Run(name, func(t *testing.T) {
			a := randomBytes(64<<10 + 500)
			rx := unremovedReceiver(t, a)
			rx.e.opts.DisableResume = off
			var logged lockedBuffer
			rx.e.log = slog.New(slog.NewTextHandler(&logged, nil))
			landAll(t, rx, 0, a, 0)
			part := filepath.Join(rx.DestDir, "d", "a.bin.partial")
			undo := immutable(t, filepath.Dir(part))
			if rx.cleanup(false, false) {
				t.Fatal("cleanup kept the session for a resume")
			}
			if _, err := os.Stat(part); err != nil {
				t.Fatalf("the partial: %v", err)
			}
			l := listing(rx.e, rx.DestDir, "d/a.bin.partial")
			if off {
				if log := logged.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, part) {
					t.Errorf("the log says %q, want a warning naming %s", log, part)
				}
				if len(l) != 0 {
					t.Errorf("listed with resume off: %+v", l)
				}
				return
			}
			if len(l) != 1 || !l[0].Unremoved {
				t.Fatalf("the partial that could not be removed: listed as %+v", rx.e.Partials())
			}
			undo()
			discardAll(t, rx.e)
			if left, _ := filepath.Glob(filepath.Join(rx.DestDir, "d", "*")); len(left) != 0 {
				t.Errorf("left in the destination: %v", left)
			}
		})
	}
}

// TestDiscardOfAKeyNotListedKeepsWhatWasListedSince: discarding a key
// that lists nothing (discarded already, by another process, or never
// there) keeps what a transfer, here or in another process on the same
// config, listed under it between the discard's listing and its end: the
// key's files were removed without the lock KeepUnremoved takes, and a
// partial listed meanwhile stayed in the folder, listed nowhere.
func TestDiscardOfAKeyNotListedKeepsWhatWasListedSince(t *testing.T) {
	a := randomBytes(64<<10 + 500)
	rx := unremovedReceiver(t, a)
	landAll(t, rx, 0, a, 0)
	f := fileOf(t, rx, 0)
	peer := rx.c.PeerID().String()
	key := resume.Key(peer, "unremoved\x00"+filepath.Clean(rx.DestDir)) // the key KeepUnremoved lists under
	rx.e.discarding = func() {
		rx.e.discarding = nil
		if err := rx.e.resume.KeepUnremoved(peer, "", rx.DestDir,
			[]resume.File{{Index: 0, Path: "d/a.bin", Partial: f.partName, PartialID: f.partID}}); err != nil {
			t.Error(err)
		}
	}
	if d, err := rx.e.DiscardPartialFiles(key); err != nil || d.Files != 0 {
		t.Fatalf("discard: %+v, %v", d, err)
	}
	if l := listing(rx.e, rx.DestDir, "d/a.bin.partial"); len(l) != 1 || l[0].Key != key || !l[0].Unremoved {
		t.Fatalf("the partial listed since: listed as %+v", rx.e.Partials())
	}
}

// TestDiscardKeepsWhatWasListedSince: discarding a device's unremoved
// partials in a folder keeps listed a partial that a transfer (here, or in
// another process on the same config) listed there between the discard's
// listing and its end; the state went whole, and that partial stayed in
// the folder, listed nowhere.
func TestDiscardKeepsWhatWasListedSince(t *testing.T) {
	a, b := randomBytes(64<<10+500), randomBytes(64<<10+500)
	rx := createReceiver(t, a, b)
	rx.c, _ = newPipeConns(identity.DeviceID{}, identity.DeviceID{})
	rx.DestDir = rx.Dest.Dir()
	landAll(t, rx, 0, a, 0)
	undo := immutable(t, filepath.Join(rx.DestDir, "d"))
	rx.resolve(fileOf(t, rx, 0), false, "", wire.CodeIO, "the disk failed")
	undo()
	l := listing(rx.e, rx.DestDir, "d/a.bin.partial")
	if len(l) != 1 || !l[0].Unremoved {
		t.Fatalf("the failed file's partial: listed as %+v", rx.e.Partials())
	}
	landAll(t, rx, 1, b, 0)
	fb := fileOf(t, rx, 1)
	rx.e.discarding = func() {
		rx.e.discarding = nil
		if err := rx.e.resume.KeepUnremoved(rx.c.PeerID().String(), "", rx.DestDir,
			[]resume.File{{Index: 1, Path: "d/b.bin", Partial: fb.partName, PartialID: fb.partID}}); err != nil {
			t.Error(err)
		}
	}
	if d, err := rx.e.DiscardPartialFiles(l[0].Key); err != nil || d.Files != 1 {
		t.Fatalf("discard: %+v, %v", d, err)
	}
	if _, err := os.Stat(filepath.Join(rx.DestDir, "d", "a.bin.partial")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the discarded partial: %v", err)
	}
	if l := listing(rx.e, rx.DestDir, "d/b.bin.partial"); len(l) != 1 || !l[0].Unremoved || slices.Contains(l[0].Partials, "d/a.bin.partial") {
		t.Fatalf("the partial listed since: listed as %+v", rx.e.Partials())
	}
}
