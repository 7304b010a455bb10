package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestMountType reads a mount's type from a mount table by its device.
func TestMountType(t *testing.T) {
	table := `22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
36 22 0:45 / /media/stick rw,nosuid,nodev,relatime shared:2 - fuse.fusefat /img rw,user_id=0,group_id=0
37 22 0:46 / /media/two\040words rw,relatime - vfat /dev/sdb1 rw,fmask=0022
38 22 0:47 / /x rw - 
`
	for _, c := range []struct {
		major, minor uint32
		want         string
	}{{0, 45, "fuse.fusefat"}, {0, 46, "vfat"}, {253, 0, "ext4"}, {0, 47, ""}, {0, 99, ""}} {
		if got := mountType(bufio.NewScanner(strings.NewReader(table)), c.major, c.minor); got != c.want {
			t.Errorf("mountType(%d:%d) = %q, want %q", c.major, c.minor, got, c.want)
		}
	}
}

// TestMaxFileSizeOfAFATMount mounts a FAT32 image (the kernel's vfat,
// else fusefat) and reads its limit, and none from an ordinary folder.
// It needs root, mkfs.vfat and either driver: it skips without them.
func TestMaxFileSizeOfAFATMount(t *testing.T) {
	if l := MaxFileSize(t.TempDir()); l.Max != 0 {
		t.Errorf("MaxFileSize of a temporary folder = %+v, want none", l)
	}
	mnt := testutil.FATStick(t)
	if l := MaxFileSize(mnt); l.Max != FATMax || l.FS != "FAT32" {
		t.Errorf("MaxFileSize of a FAT32 mount = %+v", l)
	}
	if l := MaxFileSize(filepath.Join(mnt, "not", "made", "yet")); l.Max != FATMax {
		t.Errorf("MaxFileSize of a folder to make on it = %+v", l)
	}
}

// A partial reopened to resume on a FAT32 stick is finalized there when it
// holds its whole size: fusefat (this kernel has no vfat) refuses every
// truncate, even to the size a file has, and Finalize truncated a reopened
// partial, whose length it did not know, so the resume failed at its end
// ("operation not permitted"). Needs root and a FAT32 mount: it skips
// without them.
func TestReopenedPartialOnAFATStickIsFinalized(t *testing.T) {
	d, _ := openStick(t, testutil.FATStick)
	data := bytes.Repeat([]byte("ferry "), 50_000)
	p, err := d.CreatePartial("film.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	name, id := p.Name(), p.Identity()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	q, err := d.OpenPartial(name, id)
	if err != nil {
		t.Fatal(err)
	}
	if as, err := d.Finalize(q, "film.bin", int64(len(data))); err != nil || as != "film.bin" {
		q.Close() // or the stick stays busy
		t.Fatalf("finalize the reopened partial: %q, %v", as, err)
	}
	if got, err := os.ReadFile(filepath.Join(d.Dir(), "film.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("saved %d bytes, %v; want %d", len(got), err, len(data))
	}
}

// The fill of a partial on a fusefat stick (Dest.inOrder) stops when its
// context ends, before its next write, with the context's cause: a
// transfer cancelled meanwhile waited for the whole fill (10.7 s for 56 MiB
// on a 64 MB stick). A fill begun again goes on from the partial's end.
// Needs root and a fusefat mount: it skips without them.
func TestFillOnAFATStickStopsWithItsContext(t *testing.T) {
	d := fuseFATDest(t)
	const size = 3<<20 + 5
	for _, fill := range []struct {
		name string
		do   func(*Partial, context.Context) error
	}{
		{"Reserve", func(p *Partial, ctx context.Context) error { return p.Reserve(ctx, size) }},
		{"Sparse", func(p *Partial, ctx context.Context) error { return p.Sparse(ctx, size) }},
	} {
		p, err := d.CreatePartial(fill.name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		ended, end := context.WithCancelCause(context.Background())
		cancelled := errors.New("cancelled by the user")
		end(cancelled)
		if err := fill.do(p, ended); !errors.Is(err, cancelled) {
			t.Errorf("%s after its context ended: %v, want %v", fill.name, err, cancelled)
		}
		if fi, err := os.Stat(filepath.Join(d.Dir(), p.Name())); err != nil || fi.Size() != 0 {
			t.Errorf("%s after its context ended wrote %d bytes (%v), want none", fill.name, fi.Size(), err)
		}
		if _, err := p.WriteAt([]byte("ferry"), 0); err != nil { // a part filled partial
			t.Fatal(err)
		}
		if err := fill.do(p, context.Background()); err != nil {
			t.Fatalf("%s: %v", fill.name, err)
		}
		got, err := os.ReadFile(filepath.Join(d.Dir(), p.Name()))
		if want := append([]byte("ferry"), make([]byte, size-5)...); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s filled on to %d bytes (%v), want %q and zeros to %d", fill.name, len(got), err, "ferry", size)
		}
		if err := d.Discard(p); err != nil {
			t.Fatal(err)
		}
	}
}

// An upload (LocalSend, a browser) to a fusefat stick is written once, in
// order, as it comes: its partial was filled with zeros first
// (SparseUpload's Sparse), which wrote the file twice while the upload's
// request waited, and could not be cut short. Needs root and a fusefat
// mount: it skips without them.
func TestUploadOnAFATStickIsWrittenOnce(t *testing.T) {
	d := fuseFATDest(t)
	data := bytes.Repeat([]byte("ferry "), 1<<20) // 6 MiB
	clear(data[1<<20 : 3<<20])                    // and zeros, as a sparse file has
	p, err := d.CreatePartial("upload.bin")
	if err != nil {
		t.Fatal(err)
	}
	p.SparseUpload(int64(len(data)))
	if fi, err := os.Stat(filepath.Join(d.Dir(), p.Name())); err != nil || fi.Size() != 0 {
		t.Errorf("the upload's partial holds %d bytes before its first write (%v), want none", fi.Size(), err)
	}
	for off := 0; off < len(data); off += 256 << 10 {
		if _, err := p.WriteAt(data[off:min(len(data), off+256<<10)], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Finalize(p, "upload.bin", int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(d.Dir(), "upload.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("saved %d bytes (%v), not the %d uploaded", len(got), err, len(data))
	}
}

// Names sent to an exFAT stick mounted by exfat-fuse are saved as Windows
// would save them, as on a FAT one: its mount's type, "fuseblk", does not
// say exFAT, and exfat-fuse keeps a final dot, a final space and a device
// name as they are ("notes.", "CON"), which Windows cannot open, while it
// refuses `:` and `?`. Where the type is fuseblk the folder is asked (a
// name with `?` is refused there). Needs root, mkfs.exfat and exfat or
// exfat-fuse: it skips without them.
func TestNamesOnAnExFATStickAreSavedAsWindowsWould(t *testing.T) {
	d, stick := openStick(t, testutil.ExFATStick)
	for rel, want := range map[string]string{"notes.": "notes", "CON": "CON_", "trail ": "trail", "a:b.txt": "a_b.txt", "plain.txt": "plain.txt"} {
		p, err := d.CreatePartial(rel)
		if err != nil {
			t.Fatalf("create %q: %v", rel, err)
		}
		if as, err := d.Finalize(p, rel, 0); err != nil || as != want {
			t.Errorf("%q saved as %q (%v), want %q", rel, as, err, want)
		}
	}
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if validatePath(n.Name(), true) != nil {
			t.Errorf("the stick holds %q, which Windows cannot open", n.Name())
		}
	}
}

// fuseFATDest opens a FAT stick mounted by fusefat (testutil.FATStick),
// whose partials are filled in order (Dest.inOrder), and skips the test
// where it is mounted otherwise.
func fuseFATDest(t *testing.T) *Dest {
	t.Helper()
	d, _ := openStick(t, testutil.FATStick)
	if !d.inOrder {
		t.Skip("the stick is not mounted by fusefat, whose partials are filled")
	}
	return d
}
