package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
