package weblink

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// checkZip reads a zip whole and checks every entry's bytes (archive/zip
// checks each CRC as it reads) against want, each stored (not compressed).
func checkZip(t *testing.T, z []byte, want map[string][]byte) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("the zip is broken: %v", err)
	}
	left := len(want)
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want stored", f.Name, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if w, ok := want[f.Name]; !ok || !bytes.Equal(got, w) {
			t.Fatalf("zip entry %q: %d bytes, unexpected", f.Name, len(got))
		}
		left--
	}
	if left != 0 {
		t.Fatalf("the zip has %d entries, want %d", len(zr.File), len(want))
	}
}

// A share's zip has a size and an ETag, and a download that broke off
// resumes from any byte (If-Range with the ETag, as browsers send it): the
// bytes of every range are those of the whole zip. From a share that
// computed no CRC yet (a fresh link) too: the files before the range are
// read for them. A file that changed since makes a new ETag, and the old
// one then gets the whole new zip, never a mix.
func TestZipResumesByRange(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{
		"photos/a.bin":       writeFile(t, dir, "photos/a.bin", 700_000),
		"photos/empty":       writeFile(t, dir, "photos/empty", 0),
		"photos/ünïcødé.txt": writeFile(t, dir, "photos/ünïcødé.txt", 1234),
		"photos/sub/c.bin":   writeFile(t, dir, "photos/sub/c.bin", 300_001),
	}
	s := startServer(t, Options{DeviceName: "Alice"})
	share := func() *Link {
		l, err := s.Share(context.Background(), []string{filepath.Join(dir, "photos")}, ShareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := share()
	c := &http.Client{}
	res, z := get(t, c, base(s)+l.Path()+"all.zip")
	if res.StatusCode != 200 {
		t.Fatalf("zip: %d", res.StatusCode)
	}
	checkZip(t, z, want)
	etag := res.Header.Get("ETag")
	if etag == "" || res.Header.Get("Content-Length") != strconv.Itoa(len(z)) {
		t.Fatalf("ETag %q, Content-Length %q for %d bytes", etag, res.Header.Get("Content-Length"), len(z))
	}
	if res.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("Accept-Ranges %q", res.Header.Get("Accept-Ranges"))
	}
	if res, _ := get(t, c, base(s)+l.Path()+"all.zip"); res.Header.Get("ETag") != etag {
		t.Fatalf("the same files, another ETag: %q then %q", etag, res.Header.Get("ETag"))
	}
	var acts []Activity
	for _, a := range l.Activities() {
		if a.Zip {
			acts = append(acts, a)
		}
	}
	if len(acts) != 2 || acts[0].Size != int64(len(z)) || !acts[0].Done || acts[0].Err != nil {
		t.Fatalf("the sharer's activities %+v, want two whole downloads of %d bytes", acts, len(z))
	}

	// Every kind of place a download can break off: in a header, in a
	// file, in a data descriptor, in the central directory, the last byte.
	zr, _ := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	var starts []int64
	for _, f := range zr.File {
		off, _ := f.DataOffset()
		starts = append(starts, off-3, off+int64(f.UncompressedSize64)/2, off+int64(f.UncompressedSize64)+5)
	}
	starts = append(starts, 0, 1, int64(len(z))-30, int64(len(z))-1)
	for _, fresh := range []bool{false, true} {
		from := l
		if fresh {
			from = share() // no CRC known yet
		}
		for _, at := range starts {
			at = max(at, 0)
			res, got := get(t, c, base(s)+from.Path()+"all.zip", "Range", fmt.Sprintf("bytes=%d-", at), "If-Range", etag)
			if res.StatusCode != http.StatusPartialContent || !bytes.Equal(got, z[at:]) {
				t.Fatalf("fresh %v: from %d of %d: %d, %d bytes, want the zip's last %d", fresh, at, len(z), res.StatusCode, len(got), len(z)-int(at))
			}
			// A window in the middle, as a download manager asks for.
			end := min(at+70_000, int64(len(z))-1)
			res, got = get(t, c, base(s)+from.Path()+"all.zip", "Range", fmt.Sprintf("bytes=%d-%d", at, end))
			if res.StatusCode != http.StatusPartialContent || !bytes.Equal(got, z[at:end+1]) {
				t.Fatalf("fresh %v: %d-%d: %d, %d bytes", fresh, at, end, res.StatusCode, len(got))
			}
		}
	}
	// The resumed download that reaches the end counts as whole.
	var resumed Activity
	for _, a := range l.Activities() {
		resumed = a
	}
	if !resumed.Done || resumed.Err != nil || resumed.Size != int64(len(z)) {
		t.Errorf("the last range's activity %+v", resumed)
	}

	// The last bytes (a suffix range), and a range past the end.
	if res, got := get(t, c, base(s)+l.Path()+"all.zip", "Range", "bytes=-30"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(got, z[len(z)-30:]) {
		t.Fatalf("the last 30 bytes: %d, %d bytes", res.StatusCode, len(got))
	}
	if res, _ := get(t, c, base(s)+l.Path()+"all.zip", "Range", fmt.Sprintf("bytes=%d-", len(z))); res.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Fatalf("a range past the end: %d", res.StatusCode)
	}
	// Several ranges in one request get the whole zip.
	if res, got := get(t, c, base(s)+l.Path()+"all.zip", "Range", "bytes=0-9,100-199"); res.StatusCode != 200 || !bytes.Equal(got, z) {
		t.Fatalf("several ranges: %d, %d bytes", res.StatusCode, len(got))
	}

	// A file changes: another ETag, and a resume with the old one gets the
	// new zip whole.
	changed := bytes.Repeat([]byte("new"), 1000)
	if err := os.WriteFile(filepath.Join(dir, "photos/sub/c.bin"), changed, 0o644); err != nil {
		t.Fatal(err)
	}
	want["photos/sub/c.bin"] = changed
	res, got := get(t, c, base(s)+l.Path()+"all.zip", "Range", "bytes=1000-", "If-Range", etag)
	if res.StatusCode != 200 || res.Header.Get("ETag") == etag {
		t.Fatalf("after a change: %d, ETag %q (was %q)", res.StatusCode, res.Header.Get("ETag"), etag)
	}
	checkZip(t, got, want)
}

// A file that changes between the plan and its turn in the zip stops the
// zip there: the answer is cut short (the browser sees a failed download
// and gets a new zip when it tries again), never a whole zip of other
// bytes than its ETag promised.
func TestZipStopsAtAFileThatChanged(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d/a.bin", 5000)
	writeFile(t, dir, "d/b.bin", 5000)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "d")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sh := l.share
	for _, change := range []func(p string) error{
		func(p string) error { return os.Truncate(p, 4000) },
		func(p string) error { return os.Chtimes(p, time.Time{}, time.Now().Add(time.Hour)) },
		os.Remove,
	} {
		p, err := sh.planZip(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "d/b.bin", 5000)
		if err := change(filepath.Join(dir, "d/b.bin")); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		n, err := sh.writeZip(context.Background(), context.Background(), p, &out, 0, p.size)
		if err == nil || n >= p.size || int64(out.Len()) >= p.size {
			t.Fatalf("wrote %d of %d bytes, err %v: want it cut short", out.Len(), p.size, err)
		}
		writeFile(t, dir, "d/b.bin", 5000)
	}
	// What it says when it is cut short by a change.
	p, _ := sh.planZip(context.Background())
	os.Truncate(filepath.Join(dir, "d/b.bin"), 10)
	_, err = sh.writeZip(context.Background(), context.Background(), p, io.Discard, 0, p.size)
	if !errors.Is(err, errZipChanged) {
		t.Fatalf("err %v, want errZipChanged", err)
	}
}

// A file of 4 GiB and more makes a zip64 (its sizes and the offsets after
// it do not fit in 32 bits), laid out by archive/zip and resumable as any
// other: the tail of the zip, fetched by range, holds the small file after
// the big one, whole and with its CRC.
func TestZip64ResumesByRange(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "d/big.img")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	const bigSize = 4<<30 + 1000
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, bigSize); err != nil { // sparse: zeros
		t.Fatal(err)
	}
	small := writeFile(t, dir, "d/small.txt", 777)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "d")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its CRC as an earlier download of the link would have left it (reading
	// 4 GiB of a sparse file takes this VM's kernel most of a minute).
	fi, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}
	bigCRC := zerosCRC(bigSize)
	for i, f := range l.share.files {
		if f.name == "d/big.img" {
			l.share.keepCRC(zipEntry{row: i, size: bigSize, mod: fi.ModTime().UnixNano()}, bigCRC)
		}
	}
	c := &http.Client{}
	res, head := get(t, c, base(s)+l.Path()+"all.zip", "Range", "bytes=0-4095")
	size, err := strconv.ParseInt(res.Header.Get("Content-Range")[len("bytes 0-4095/"):], 10, 64)
	if res.StatusCode != http.StatusPartialContent || err != nil || size < bigSize {
		t.Fatalf("head: %d, Content-Range %q", res.StatusCode, res.Header.Get("Content-Range"))
	}
	tailAt := int64(bigSize) - 100 // in the big file, which is zeros
	res, tail := get(t, c, base(s)+l.Path()+"all.zip", "Range", fmt.Sprintf("bytes=%d-", tailAt), "If-Range", res.Header.Get("ETag"))
	if res.StatusCode != http.StatusPartialContent || int64(len(tail)) != size-tailAt {
		t.Fatalf("tail: %d, %d bytes", res.StatusCode, len(tail))
	}
	zr, err := zip.NewReader(&sparseZip{head: head, tail: tail, tailAt: tailAt}, size)
	if err != nil {
		t.Fatalf("the zip64 is broken: %v", err)
	}
	if len(zr.File) != 2 || zr.File[0].UncompressedSize64 != bigSize || zr.File[0].CRC32 != bigCRC {
		t.Fatalf("entries %+v", zr.File)
	}
	if off, _ := zr.File[1].DataOffset(); off < 1<<32 {
		t.Fatalf("the small file is at %d, before 4 GiB", off)
	}
	rc, err := zr.File[1].Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small.txt: %d bytes, %v", len(got), err)
	}
}

// sparseZip is a zip of which only the head and the tail were fetched; the
// rest is zeros (a sparse file's bytes).
type sparseZip struct {
	head, tail []byte
	tailAt     int64
}

func (s *sparseZip) ReadAt(b []byte, off int64) (int, error) {
	for i := range b {
		at := off + int64(i)
		switch {
		case at < int64(len(s.head)):
			b[i] = s.head[at]
		case at >= s.tailAt:
			if at-s.tailAt >= int64(len(s.tail)) {
				return i, io.EOF
			}
			b[i] = s.tail[at-s.tailAt]
		default:
			b[i] = 0
		}
	}
	return len(b), nil
}

// zerosCRC is the CRC32 of n zero bytes.
func zerosCRC(n int64) uint32 {
	h := crc32.NewIEEE()
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		h.Write(buf[:k])
		n -= k
	}
	return h.Sum32()
}

// A one-time link ends when its device has every byte of every file: a
// range that ends at a file's last byte is not the file (a download
// manager's last segment, a curl -r -1), the ranges a device got add up
// (a resumed download, segments), and the downloads in flight when it
// ends (another device's) finish.
func TestOnceCountsEveryByte(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.txt", 100)
	big := writeFile(t, dir, "big.bin", 32<<20)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "big.bin")}, ShareOptions{Once: true})
	if err != nil {
		t.Fatal(err)
	}
	u := base(s) + l.Path()
	c := &http.Client{}
	ended := func() bool { return l.Err() != nil }

	// Another device starts the big file and reads slowly.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	res, err := other.Get(u + "f/1/big.bin")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("the other device's download: %v %v", res, err)
	}
	defer res.Body.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(res.Body, head); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		path, rng string
		want      []byte
		ends      bool
	}{
		{"f/0/a.txt", "bytes=-1", a[99:], false},
		{"f/1/big.bin", "bytes=-10", big[len(big)-10:], false},
		{"f/0/a.txt", "", a, false},
		{"f/1/big.bin", "bytes=1000-2000", big[1000:2001], false},
		{"f/1/big.bin", fmt.Sprintf("bytes=0-%d", len(big)-11), big[:len(big)-10], true},
	} {
		if ended() {
			t.Fatalf("the link ended before %s %s", step.path, step.rng)
		}
		hdr := []string{}
		if step.rng != "" {
			hdr = []string{"Range", step.rng}
		}
		res, got := get(t, c, u+step.path, hdr...)
		if res.StatusCode >= 300 || !bytes.Equal(got, step.want) {
			t.Fatalf("%s %s: %d, %d bytes", step.path, step.rng, res.StatusCode, len(got))
		}
		if step.ends {
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the device has every byte and the one-time link did not end")
			}
		}
	}
	if !errors.Is(l.Err(), ErrOnce) {
		t.Fatalf("the link ended with %v", l.Err())
	}
	// The other device's download goes on to its end.
	rest, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(append(head, rest...), big) {
		t.Fatalf("the download in flight got %d of %d bytes: %v", len(head)+len(rest), len(big), err)
	}
}
