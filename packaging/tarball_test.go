package packaging

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The `fyne package` tarball holds the app, its desktop entry, icon and
// Makefile, normalised (commit time, root owner), and its Makefile installs
// them; the app in it is the one in the .deb.
func TestTarball(t *testing.T) {
	a := dist(t)
	needTools(t, "xz", "tar", "make")
	path := a.path("Ferry-VERSION-linux-amd64.tar.xz")
	commitTime, err := time.Parse(time.RFC3339, a.date)
	if err != nil {
		t.Fatal(err)
	}

	// Member metadata, read with archive/tar from `xz -dc`.
	xz := exec.CommandContext(t.Context(), "xz", "-dc", path)
	stdout, err := xz.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := xz.Start(); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(stdout)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[strings.TrimPrefix(h.Name, "./")] = true
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(commitTime) {
			t.Errorf("%s: uid %d gid %d time %v, want 0 0 %v", h.Name, h.Uid, h.Gid, h.ModTime, commitTime)
		}
	}
	if err := xz.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ferry/Makefile", "ferry/usr/local/bin/ferry",
		"ferry/usr/local/share/applications/io.ferrydrop.ferry.desktop", "ferry/usr/local/share/pixmaps/io.ferrydrop.ferry.png"} {
		if !names[want] {
			t.Errorf("the tarball lacks %s (has %v)", want, names)
		}
	}

	dir := t.TempDir()
	run(t, "", nil, "tar", "-xJf", path, "-C", dir)
	dest := filepath.Join(dir, "installed")
	run(t, filepath.Join(dir, "ferry"), nil, "make", "install", "DESTDIR="+dest, "PREFIX=/usr")
	for _, f := range []string{"usr/bin/ferry", "usr/share/applications/io.ferrydrop.ferry.desktop", "usr/share/pixmaps/io.ferrydrop.ferry.png"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("make install: %v", err)
		}
	}
	if _, err := exec.LookPath("desktop-file-validate"); err == nil {
		if out := run(t, "", nil, "desktop-file-validate", filepath.Join(dest, "usr/share/applications/io.ferrydrop.ferry.desktop")); strings.TrimSpace(out) != "" {
			t.Errorf("desktop-file-validate: %s", out)
		}
	}
	deb := t.TempDir()
	run(t, "", nil, "dpkg-deb", "-x", a.path("ferry_VERSION-1_amd64.deb"), deb)
	if sha256File(t, filepath.Join(dest, "usr/bin/ferry")) != sha256File(t, filepath.Join(deb, "usr/bin/ferry")) {
		t.Error("the tarball's app differs from the .deb's")
	}
}
