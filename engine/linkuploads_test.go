package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// linkLogs are the receive links' logs in e's resume folder.
func linkLogs(t *testing.T, e *Engine) []string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(e.resume.Path(), linkLogPrefix+"*"+linkLogSuffix))
	return logs
}

// A receive link logs where each upload's partial is while it is on the
// way, and forgets it when it lands; the link's end takes the log away.
func TestLinkUploadsAreLogged(t *testing.T) {
	e := testEngine(t, Options{})
	endpoint, in := browserLink(t, e, time.Hour)
	logs := linkLogs(t, e)
	if len(logs) != 1 {
		t.Fatalf("logs %v, want the link's", logs)
	}
	data := bytes.Repeat([]byte("u"), 1<<20)
	status, loc, _ := testutil.TusCreate(t, endpoint, "half.bin", len(data))
	if status != 201 {
		t.Fatalf("create: %d", status)
	}
	testutil.TusPatch(t, loc, 0, data[:len(data)/2])
	left := replayLinkLog(logs[0])
	if ps := left[e.DownloadDir()]; ps == nil || !slices.Equal(ps.names, []string{"half.bin.partial"}) || ps.ids[0] == "" {
		t.Fatalf("the log lists %v while the upload is on its way", left)
	}
	testutil.TusPatch(t, loc, int64(len(data)/2), data[len(data)/2:])
	waitUntil(t, func() bool { return len(replayLinkLog(logs[0])) == 0 })
	in.Close()
	if logs := linkLogs(t, e); len(logs) != 0 {
		t.Fatalf("logs left after the link ended: %v", logs)
	}
}

// What the log of a link whose process died lists is removed at the next
// start, if it is still a partial; a live link's log is left alone.
func TestCleanLinkUploadsAfterACrash(t *testing.T) {
	e := testEngine(t, Options{})
	dest := t.TempDir()
	d, err := store.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreatePartial("photos/IMG_1.jpg")
	if err != nil {
		t.Fatal(err)
	}
	p.WriteAt([]byte("half"), 0)
	p.Close()
	d.Close()
	saved := filepath.Join(dest, "kept.jpg") // landed: its name is not a partial's
	os.WriteFile(saved, []byte("whole"), 0o644)
	os.MkdirAll(e.resume.Path(), 0o700)
	write := func(name string, recs ...string) string {
		path := filepath.Join(e.resume.Path(), name)
		var b []byte
		for _, r := range recs {
			b = append(b, r...)
			b = append(b, '\n')
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-3 * staleLinkLog)
		os.Chtimes(path, old, old)
		return path
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	dead := write(linkLogPrefix+"dead"+linkLogSuffix,
		`{"op":"+","dest":`+q(dest)+`,"name":"photos/IMG_1.jpg.partial"}`,
		`{"op":"+","dest":`+q(dest)+`,"name":"kept.jpg.partial"}`,
		`{"op":"-","dest":`+q(dest)+`,"name":"kept.jpg.partial"}`,
		`{"op":"+","dest":`+q(dest)+`,"name":"kept.jpg"}`, // not a partial's name: never removed
		`{"op":"+","dest":`) // cut by the crash
	var live string
	if resume.Locking {
		live = write(linkLogPrefix+"live"+linkLogSuffix, `{"op":"+","dest":`+q(dest)+`,"name":"photos/IMG_1.jpg.partial"}`)
		f, err := os.Open(live)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		resume.Lock(f)
	}
	if n := e.cleanLinkUploads(); n != 1 { // the partial; kept.jpg is left alone (not a partial's name)
		t.Fatalf("cleaned %d", n)
	}
	if _, err := os.Stat(filepath.Join(dest, "photos/IMG_1.jpg.partial")); !os.IsNotExist(err) {
		t.Fatalf("the crash's partial stayed: %v", err)
	}
	if b, err := os.ReadFile(saved); err != nil || string(b) != "whole" {
		t.Fatalf("a saved file was touched: %q %v", b, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatal("the dead link's log stayed")
	}
	if live != "" {
		if _, err := os.Stat(live); err != nil {
			t.Fatalf("a live link's log was taken: %v", err)
		}
	}
}

// TestCleanLinkUploadsThatCannotRemoveAPartialKeepsItListed: a partial that
// a dead link's log lists and that cannot be removed (on Windows another
// program has it open; here the folder is immutable) stays listed as
// unremoved before the log goes, to be discarded again and aged out. It
// stayed in the folder, listed nowhere, once the log was gone.
func TestCleanLinkUploadsThatCannotRemoveAPartialKeepsItListed(t *testing.T) {
	e := testEngine(t, Options{})
	dest := t.TempDir()
	d, err := store.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreatePartial("photos/IMG_1.jpg")
	if err != nil {
		t.Fatal(err)
	}
	p.WriteAt([]byte("half"), 0)
	name, id := p.Name(), p.Identity()
	p.Close()
	d.Close()
	os.MkdirAll(e.resume.Path(), 0o700)
	line, _ := json.Marshal(linkUploadRec{Op: "+", Dest: dest, Name: name, ID: id})
	dead := filepath.Join(e.resume.Path(), linkLogPrefix+"dead"+linkLogSuffix)
	if err := os.WriteFile(dead, append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * staleLinkLog)
	os.Chtimes(dead, old, old)
	undo := immutable(t, filepath.Join(dest, "photos"))
	if n := e.cleanLinkUploads(); n != 0 {
		t.Fatalf("cleaned %d from an immutable folder", n)
	}
	if _, err := os.Stat(filepath.Join(dest, "photos", "IMG_1.jpg.partial")); err != nil {
		t.Fatalf("the partial: %v", err)
	}
	if l := listing(e, dest, "photos/IMG_1.jpg.partial"); len(l) != 1 || !l[0].Unremoved {
		t.Fatalf("the partial that could not be removed: listed as %+v", e.Partials())
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead link's log stayed: %v", err)
	}
	undo()
	discardAll(t, e)
	if left, _ := filepath.Glob(filepath.Join(dest, "photos", "*")); len(left) != 0 {
		t.Errorf("left in the folder: %v", left)
	}
}

// The log of a receive link (or a LocalSend session) in the resume folder
// is no unfinished transfer: ferry-cli partials listed each live one as
// "link-<random>: its snapshot is missing, receiving now", which could not
// be discarded, beside the transfers it can.
func TestUploadsLogIsNoUnfinishedTransfer(t *testing.T) {
	e := testEngine(t, Options{})
	u := e.openLinkUploads()
	defer u.close(true)
	u.began(e.DownloadDir(), "a.bin.partial", "")
	if ps := e.Partials(); len(ps) != 0 {
		t.Errorf("unfinished transfers listed: %+v", ps)
	}
}

// A receive link left open for days keeps a log the size of what is on its
// way, not of every upload it ever had: two lines per upload for the
// link's life (soak of one receive --link: 0.36 KB more of its config
// folder per two uploads, docs/benchmarks/soak.md). Written anew, the log
// still lists the partials on their way, and only those.
func TestLinkUploadsLogStaysSmall(t *testing.T) {
	e := testEngine(t, Options{})
	u := e.openLinkUploads()
	dest := e.DownloadDir()
	const many = 2000
	for i := range many {
		name := fmt.Sprint("f", i, ".bin.partial")
		u.began(dest, name, fmt.Sprint("id", i))
		if i%500 != 7 { // a few stay on their way
			u.ended(dest, name)
		}
	}
	logs := linkLogs(t, e)
	if len(logs) != 1 {
		t.Fatalf("logs %v, want one", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b, []byte("\n")); lines > 2*4+linkLogSlack+1 {
		t.Errorf("after %d uploads, 4 on their way, the log holds %d lines (%d bytes)", many, lines, len(b))
	}
	left := replayLinkLog(logs[0])[dest]
	if left == nil {
		t.Fatal("the log lists nothing")
	}
	names := slices.Sorted(slices.Values(left.names))
	if want := []string{"f1007.bin.partial", "f1507.bin.partial", "f507.bin.partial", "f7.bin.partial"}; !slices.Equal(names, want) {
		t.Errorf("the log lists %v, want %v", names, want)
	}
	u.close(false)
}
