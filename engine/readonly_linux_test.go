package engine

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A download folder that became read-only after it was chosen (its file
// system remounted read-only: a stick's errors, a full disk's remount)
// refuses an offer whole as it arrives, before anyone is asked, in one sentence to each side; the
// sender is told at once, before a byte of the files crossed, and does
// not try again. It was accepted and then
// failed file by file once the bytes had crossed ("On vm, none of the 2
// files could be saved; the first: read-only file system."). Needs root
// to mount a tmpfs: it skips without.
func TestOfferToAReadOnlyFolderIsRefusedAtOnce(t *testing.T) {
	mnt := mountTmpfs(t)
	recv := startReceiver(t, Options{DownloadDir: mnt})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Skipf("remount read-only: %v: %s", err, out)
	}
	send := testEngine(t, Options{})
	src := t.TempDir()
	a, b := filepath.Join(src, "a.txt"), filepath.Join(src, "b.txt")
	writeFile(t, a, 1000)
	writeFile(t, b, 2000)
	r := sendWait(t, send, target(recv), []string{a, b}, SendOptions{})
	const cause = "none of the 2 files could be saved: the download folder cannot be written (read-only file system)"
	want := "On " + recv.Name() + ", " + cause + "."
	if r.State != StateFailed || r.Err != want || r.Verified != 0 || r.Bytes != 0 {
		t.Errorf("the sender's result %+v, want %q", r, want)
	}
	var got *Result
	for ev := range events {
		if ev.Kind == EventResult && ev.Direction == Receiving {
			got = ev.Result
			break
		}
	}
	here := "None of the 2 files could be saved here: the download folder " + mnt + " cannot be written (read-only file system)."
	if got == nil || got.State != StateFailed || got.Err != here {
		t.Errorf("the receiver's result %+v, want %q", got, here)
	}
}

// mountTmpfs mounts a small tmpfs on a temp folder for the test's life.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// A receive link on a download folder that cannot be written is not
// opened: the user who shows it reads why at once ("receive link: the
// download folder MNT cannot be written (read-only file system)"), where
// it opened and its first upload failed on the page ("the file could not
// be saved on the receiving device"). A link opened before the folder
// turned read-only refuses each upload as it is created, the page saying
// why without the folder and this device with it. Needs root to mount a
// tmpfs: it skips without.
func TestReceiveLinkOnAReadOnlyFolder(t *testing.T) {
	mnt := mountTmpfs(t)
	recv := startReceiver(t, Options{Accept: AcceptAsk, DownloadDir: mnt})
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	open, err := recv.ReceiveLink(LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Skipf("remount read-only: %v: %s", err, out)
	}
	status, _, body := testutil.TusCreateMeta(t, open.URLs[0]+"tus/", "a.txt", 10, batchMeta("b1b1b1b1b1b1b1b1", 1, 10, ""))
	const page = "the receiving device's download folder cannot be written"
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), page) {
		t.Errorf("upload into the read-only folder: %d %q, want refused: %q", status, body, page)
	}
	here := "The download folder " + mnt + " cannot be written (read-only file system)."
	for file := (*FileResult)(nil); file == nil; {
		select {
		case ev := <-events:
			if ev.Kind == EventFile && ev.Direction == Receiving {
				if file = ev.File; file.Err != here {
					t.Errorf("this device reads %q, want %q", file.Err, here)
				}
			}
		case <-time.After(time.Minute):
			t.Fatal("no event of the refused file")
		}
	}
	_, err = recv.ReceiveLink(LinkOptions{})
	if want := "receive link: the download folder " + mnt + " cannot be written (read-only file system)"; !errors.Is(err, store.ErrNotWritable) || err.Error() != want {
		t.Errorf("a new link: %v, want %q", err, want)
	}
	if got := recv.Links(); len(got) != 1 {
		t.Errorf("links %+v: only the one opened before", got)
	}
}

// An offer refused unasked for want of room is named by its receiver's
// events as the other refusals are (TestOfferRefusedUnaskedIsNamed): a.txt
// of 9 MB into a tmpfs of 8 MB. Needs root to mount a tmpfs: it skips
// without.
func TestOfferRefusedForRoomIsNamed(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk, DownloadDir: mountTmpfs(t)})
	refusedOfferIsNamed(t, recv, StateDeclined)
}
