package packaging

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tarballFiles is what the tarball's Makefile installs, relative to PREFIX.
var tarballFiles = []string{
	"bin/ferry", "bin/ferry-cli",
	"share/applications/io.ferrydrop.ferry.desktop", "share/pixmaps/io.ferrydrop.ferry.png",
	"share/metainfo/io.ferrydrop.ferry.metainfo.xml",
	"share/doc/ferry/LICENSE", "share/doc/ferry/THIRD_PARTY_LICENSES",
	"share/icons/hicolor/256x256/apps/io.ferrydrop.ferry.png",
	"share/man/man1/ferry.1.gz", "share/man/man1/ferry-cli.1.gz",
}

// The tarball holds the app, ferry-cli, the desktop entry, the icons, the
// AppStream file, the manual pages, the licences and a Makefile, normalised (commit time, root
// owner); its Makefile installs them (system-wide with DESTDIR and PREFIX,
// and per user), and uninstalls them again, with the folders it made and
// not one that was there before; the app in it is the one in the .deb.
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
	for _, want := range append([]string{"ferry/Makefile", "ferry/LICENSE"}, prefixed("ferry/usr/local/", tarballFiles)...) {
		if !names[want] {
			t.Errorf("the tarball lacks %s (has %v)", want, names)
		}
	}

	dir := t.TempDir()
	run(t, "", nil, "tar", "-xJf", path, "-C", dir)
	dest := filepath.Join(dir, "installed")
	run(t, filepath.Join(dir, "ferry"), nil, "make", "install", "DESTDIR="+dest, "PREFIX=/usr")
	for _, f := range prefixed("usr/", tarballFiles) {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("make install: %v", err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dest, "usr/bin/ferry-cli")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("make install: ferry-cli %v (mode %v), want 0755", err, fi)
	}
	sameText(t, filepath.Join(dest, "usr/share/doc/ferry/LICENSE"), licenseText(t))
	third, err := os.ReadFile(filepath.Join(dest, "usr/share/doc/ferry/THIRD_PARTY_LICENSES"))
	if err != nil {
		t.Fatal(err)
	}
	checkThirdParty(t, string(third), filepath.Join(dest, "usr/bin/ferry"), filepath.Join(dest, "usr/bin/ferry-cli"))
	if _, err := exec.LookPath("appstreamcli"); err == nil {
		run(t, "", nil, "appstreamcli", "validate", "--no-net", "--explain", filepath.Join(dest, "usr/share/metainfo/io.ferrydrop.ferry.metainfo.xml"))
	}

	// Per user, into ~/.local, as a user without root would; one who
	// already has a ~/.local/share, an empty folder of another app and
	// another app's desktop entry, which stay.
	home := t.TempDir()
	for _, d := range []string{".local/share/applications", ".local/share/icons/hicolor/48x48/apps"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".local/share/applications/other.desktop"), []byte("[Desktop Entry]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	homeBefore := pathsUnder(t, home)
	run(t, filepath.Join(dir, "ferry"), []string{"HOME=" + home}, "make", "user-install")
	for _, f := range prefixed(".local/", tarballFiles) {
		if _, err := os.Stat(filepath.Join(home, f)); err != nil {
			t.Errorf("make user-install: %v", err)
		}
	}
	run(t, filepath.Join(dir, "ferry"), []string{"HOME=" + home}, "make", "user-uninstall")
	if left := pathsUnder(t, home); !slices.Equal(left, homeBefore) {
		t.Errorf("make user-uninstall left %v, want only what was there before: %v", left, homeBefore)
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
	run(t, filepath.Join(dir, "ferry"), nil, "make", "uninstall", "DESTDIR="+dest, "PREFIX=/usr")
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("make uninstall left %v (and the folder DESTDIR, which it created)", pathsUnder(t, dest))
	}
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// filesUnder lists the files (not folders) below dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// pathsUnder lists the files and folders below dir, in name order, a
// folder with a trailing slash.
func pathsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			if d.IsDir() {
				p += "/"
			}
			files = append(files, p)
		}
		return nil
	})
	return files
}
