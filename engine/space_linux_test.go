package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Small files take whole blocks: on a receiver with 2 MiB free, 600 files
// of one byte (600 bytes, 2.4 MiB of blocks) are refused before anything
// is written, with the figures; 300 (1.2 MiB of blocks) arrive whole.
// Counted by their bytes, the 600 were let in and failed file by file
// once the disk was full.
func TestSmallFilesCountInTheSpaceCheck(t *testing.T) {
	disk := testutil.SmallDisk(t, "size=2m")
	recv := startReceiver(t, Options{DownloadDir: disk})
	got := resultsOf(t, recv, Receiving, 2)
	send := testEngine(t, Options{})
	folder := func(files int) string {
		src := filepath.Join(t.TempDir(), fmt.Sprintf("notes%d", files))
		for i := range files {
			writeFile(t, filepath.Join(src, fmt.Sprintf("%d.txt", i)), 1)
		}
		return src
	}

	res := sendWait(t, send, target(recv), []string{folder(600)}, SendOptions{})
	if res.State != StateDeclined || !strings.Contains(res.Err, "needed") || !strings.Contains(res.Err, "600 B of files, in whole blocks of 4 KiB") {
		t.Fatalf("600 one-byte files: %s %q, want refused for want of space, with the figures", res.State, res.Err)
	}
	if r := next(t, got); r.State != StateDeclined || !strings.Contains(r.Err, "Not enough space") {
		t.Errorf("receive: %s %q, want declined for want of space", r.State, r.Err)
	}
	if ents, _ := os.ReadDir(disk); len(ents) != 0 {
		t.Errorf("the refused offer left %d entries in the download folder", len(ents))
	}

	src := folder(300)
	if res := sendWait(t, send, target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Fatalf("300 one-byte files: %s %q, want done", res.State, res.Err)
	}
	if r := next(t, got); r.State != StateDone {
		t.Fatalf("receive: %s %q", r.State, r.Err)
	}
	if n := sameTree(t, src, disk); n != 300 {
		t.Errorf("%d files arrived, want 300", n)
	}
}

// A file system that can make only so many more files (inodes): an offer of
// more empty files than that (and their folder) is refused with the count,
// before anyone is asked, where each file would have failed in turn.
func TestTooManyFilesForTheDiskAreRefused(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk, DownloadDir: testutil.SmallDisk(t, "size=1m,nr_inodes=64")})
	files := make([]wire.FileEntry, 100)
	for i := range files {
		files[i] = wire.FileEntry{Path: fmt.Sprintf("empty/%d", i)}
	}
	d := decisionOn(t, recv, files...)
	if d == nil || d.Accept || d.Code != wire.CodeNoSpace || !strings.Contains(d.Reason, "101 files and folders to make, room for") {
		t.Fatalf("decision %+v, want a refusal that counts the files", d)
	}
}

// The folders that an offer's paths make take an entry (an inode) each, as
// its files do: 1,200 files in 300 folders of two sub-folders each (and
// the one folder above them) make 2,101 entries, refused on a disk with room for 2,000; the same tree half
// as large fits. Counted by their files alone, the 1,200 were let in and
// the disk ran out of entries part way.
func TestFoldersOfThePathsCountAsEntries(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: testutil.SmallDisk(t, "size=16m,nr_inodes=2000")})
	tree := func(tops int) []wire.FileEntry {
		var files []wire.FileEntry
		for i := range tops {
			for _, sub := range []string{"raw", "edited"} {
				for _, name := range []string{"1.jpg", "2.jpg"} {
					files = append(files, wire.FileEntry{Path: fmt.Sprintf("Photos/day %d/%s/%s", i, sub, name), Size: 1})
				}
			}
		}
		return files
	}
	// 1,200 files, 300 day folders, 600 below them and "Photos".
	if d := decisionOn(t, recv, tree(300)...); d == nil || d.Accept || d.Code != wire.CodeNoSpace || !strings.Contains(d.Reason, "2,101 files and folders to make, room for") {
		t.Fatalf("decision %+v, want a refusal that counts the files and their folders", d)
	}
	if d := decisionOn(t, recv, tree(150)...); d == nil || !d.Accept {
		t.Fatalf("decision %+v, want half the tree accepted", d)
	}
}

// A transfer that stopped part way resumes on a disk that no longer has
// its whole size free: the file saved before it stopped is not fetched
// again, and the partial of the next already holds its space (it is
// allocated whole when created). Another offer of that size is still
// refused there.
func TestResumeOntoANearlyFullDisk(t *testing.T) {
	skipIfShort(t)
	recv := startReceiver(t, Options{DownloadDir: testutil.SmallDisk(t, "size=100m")})
	send := testEngine(t, Options{})
	src := t.TempDir()
	const size = 48 << 20
	first, second := filepath.Join(src, "first.bin"), filepath.Join(src, "second.bin")
	writeFile(t, first, size)
	writeFile(t, second, size)
	other := filepath.Join(src, "other.bin")
	writeFile(t, other, size)

	// One stream: the first file is saved before the second begins; stop
	// in the second.
	opts := SendOptions{Transport: "tcp", Streams: 1}
	interruptAfter(t, send, recv, []string{first, second}, opts, 2*size*5/4, func(ev Event) bool {
		return ev.Kind == EventFile && ev.File != nil && ev.File.Path == "first.bin" && ev.File.Verified
	})
	if _, err := os.Stat(filepath.Join(recv.DownloadDir(), "first.bin")); err != nil {
		t.Fatalf("the first file was not saved before the stop: %v", err)
	}
	if free, err := store.FreeSpace(recv.DownloadDir()); err != nil || free >= size {
		t.Fatalf("%d bytes free after the interruption (%v); the test needs less than a file", free, err)
	}
	if res := sendWait(t, send, target(recv), []string{other}, opts); res.State != StateDeclined {
		t.Fatalf("another file of that size: %s %q, want refused for want of space", res.State, res.Err)
	}
	res := sendWait(t, send, target(recv), []string{first, second}, opts)
	if res.State != StateDone || res.Kept <= size {
		t.Fatalf("resume: %s %q (kept %d), want done with the first file and part of the second kept", res.State, res.Err, res.Kept)
	}
	sameTree(t, first, recv.DownloadDir())
	sameTree(t, second, recv.DownloadDir())
}

// Why a file could not be saved, in a few words: a disk that another
// program filled since the space check says so.
func TestSaveCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "write", Path: "/home/u/Downloads/a.bin.partial", Err: syscall.ENOSPC}, "the disk is full"},
		{fmt.Errorf("store: finalize: %w", &fs.PathError{Op: "fallocate", Path: "a", Err: syscall.EDQUOT}), "the disk quota is used up"},
		{&fs.PathError{Op: "open", Path: "/home/u/Downloads/a.bin", Err: syscall.EACCES}, "permission denied"},
		// A file over the file system's limit (FAT's 4 GiB, where the
		// offer's check could not read it) or a file size limit: it read
		// "file too large".
		{&fs.PathError{Op: "fallocate", Path: "a", Err: syscall.EFBIG}, "the file is larger than the download folder's file system or this user's file size limit takes (a FAT32 drive holds files of up to 4.3 GB)"},
		{fmt.Errorf("store: create %q: %w", "a", store.ErrTooManyCopies), "too many files of its name are there already"},
		// The folder deleted under a file (a LocalSend upload, a Ferry file
		// that ends before the receiver notices): not the rename's words.
		{fmt.Errorf("store: finalize %q: %w", "a", store.ErrGone), "the download folder was deleted or moved away while it arrived"},
	} {
		if got := saveCause(tc.err); got != tc.want {
			t.Errorf("saveCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A disk that another program fills while files arrive ends the transfer,
// resumable, in one sentence: the file that met it is not failed (what of
// it arrived stays in its partial), and the files after it do not fail in
// turn ("the disk is full" 759 times for a tree, which then had to be sent
// whole again). The session's watch (watchIdle) ends it on rx.full.
func TestDiskFullEndsTheTransferResumably(t *testing.T) {
	a, b := randomBytes(2*64<<10), randomBytes(3000)
	rx := createReceiver(t, a, b)
	disk := testutil.SmallDisk(t, "size=1m")
	dest, err := store.Open(disk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dest.Close() })
	rx.Dest = dest
	// Another program takes every block.
	filler, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := filler.Write(make([]byte, 64<<10)); err == nil; _, err = filler.Write(make([]byte, 4<<10)) {
	}
	filler.Close()

	landAll(t, rx, 0, a, 0, 1)
	landAll(t, rx, 1, b, 0)
	rootOf(t, rx, 1, b)
	select {
	case <-rx.full:
	default:
		t.Fatal("a write that met a full disk did not end the transfer")
	}
	rx.mu.Lock()
	status, cause := rx.status, rx.firstCause
	rx.mu.Unlock()
	if status[0] != fileAccepted || status[1] != fileAccepted || cause != "" {
		t.Errorf("files %v (first cause %q), want both still to come", status, cause)
	}
	if err := rx.diskFullErr(); !strings.Contains(err.Error(), "none of the 2 files could be saved; the first: the disk is full") ||
		!strings.Contains(err.Error(), "send again, and it resumes") {
		t.Errorf("the end says %q", err)
	}
}
