package weblink

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An upload whose bytes no longer fit (another program filled the disk
// after the space check let it in) fails at once, here and in the page:
// a 507 the page does not retry, saying the receiving device ran out of
// space (no path), its partial removed to give the space back, and the
// receiving side told "Not saved: the disk is full." It used to answer a
// 500 with "write f.bin.partial: no space left on device", which the page
// retried for two minutes while this side blamed the browser for stopping.
func TestUploadOntoAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a small tmpfs: root only")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	_, l, _, tc := startReceiveIn(t, dir, ReceiveOptions{})
	const size = 3 << 20
	loc, res := tc.create("f.bin", size)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 3<<20), 0o644) // as much as fits
	// Data, not zeros: zeros would be holes, which take no space.
	req, _ := http.NewRequest(http.MethodPatch, loc, bytes.NewReader(bytes.Repeat([]byte{1}, size)))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", "0")
	res, err := tc.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(body), "the receiving device ran out of space") || strings.Contains(string(body), dir) {
		t.Fatalf("patch onto a full disk: %d %q", res.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.bin.partial")); !os.IsNotExist(err) {
		t.Errorf("the partial stayed: %v", err)
	}
	var got *Activity
	for _, a := range l.Activities() {
		if a.Upload {
			got = &a
		}
	}
	if got == nil || !got.Done || got.Err == nil || got.Err.Error() != "Not saved: the disk is full." {
		t.Fatalf("the upload's activity: %+v", got)
	}
	// The upload is over: the page's retry finds nothing to resume.
	req, _ = http.NewRequest(http.MethodHead, loc, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if res, err := tc.c.Do(req); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD after the failure: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}
