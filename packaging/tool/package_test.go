package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stubBuild fills a BUILD folder with stand-ins for everything
// packaging/linux/nfpm.yaml takes from it, and sets the variables
// scripts/package.sh sets; the test then runs in the repository.
func stubBuild(t *testing.T) {
	t.Helper()
	build := t.TempDir()
	files := []string{"ferry", "ferry-cli", "copyright", "THIRD_PARTY_LICENSES", "io.ferrydrop.ferry.metainfo.xml", "man/ferry.1.gz", "man/ferry-cli.1.gz"}
	for _, n := range []int{16, 24, 32, 48, 64, 128, 256, 512} {
		files = append(files, fmt.Sprintf("icons/hicolor/%dx%d/apps/io.ferrydrop.ferry.png", n, n))
	}
	for _, f := range files {
		p := filepath.Join(build, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stand-in "+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("VERSION", "0.1.0")
	t.Setenv("ARCH", "amd64")
	t.Setenv("BUILD", build)
	t.Chdir("../..")
}

// The .deb from the real nfpm config is one every Debian tool reads: its
// members are compressed with xz, which dpkg, lintian (it calls a
// data.tar.zst a malformed archive) and archive tools all take, and it
// carries the changelog.Debian.gz Debian's policy requires of a package
// with a revision (lintian: no-changelog, an error), for the package's own
// version and dated SOURCE_DATE_EPOCH.
func TestDebFromConfig(t *testing.T) {
	for _, tool := range []string{"ar", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	stubBuild(t)
	out := filepath.Join(t.TempDir(), "ferry.deb")
	mtime := time.Date(2026, 12, 5, 8, 34, 57, 0, time.UTC)
	if err := writePackage("deb", "packaging/linux/nfpm.yaml", out, mtime); err != nil {
		t.Fatal(err)
	}
	members, err := exec.Command("ar", "t", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(members)), []string{"debian-binary", "control.tar.gz", "data.tar.xz"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the .deb's members are %v, want %v", got, want)
	}

	dir := t.TempDir()
	if b, err := exec.Command("dpkg-deb", "-x", out, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v: %s", err, b)
	}
	changelog := filepath.Join(dir, "usr/share/doc/ferry/changelog.Debian.gz")
	b, err := exec.Command("zcat", changelog).Output()
	if err != nil {
		t.Fatalf("no readable changelog.Debian.gz: %v", err)
	}
	text := string(b)
	for _, want := range []string{
		"ferry (0.1.0-1) stable; urgency=low\n",
		"\n -- Ferry developers <ferry@ferrydrop.invalid>  Sat, 05 Dec 2026 08:34:57 +0000\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("changelog.Debian lacks %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if len(l) > 80 {
			t.Errorf("changelog.Debian line longer than 80 characters (lintian warns): %q", l)
		}
	}
	if _, err := exec.LookPath("dpkg-parsechangelog"); err == nil {
		plain := filepath.Join(t.TempDir(), "changelog")
		if err := os.WriteFile(plain, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if v, err := exec.Command("dpkg-parsechangelog", "-l", plain, "-S", "Version").CombinedOutput(); err != nil || strings.TrimSpace(string(v)) != "0.1.0-1" {
			t.Errorf("dpkg-parsechangelog: %v: %q, want version 0.1.0-1", err, v)
		}
	}

	// The same inputs give the same bytes.
	again := filepath.Join(t.TempDir(), "ferry.deb")
	if err := writePackage("deb", "packaging/linux/nfpm.yaml", again, mtime); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(out)
	b2, _ := os.ReadFile(again)
	if string(b1) != string(b2) {
		t.Error("two builds of the .deb from the same inputs differ")
	}
}

// The .rpm carries the same entry as its %changelog (rpmlint:
// no-changelogname-tag).
func TestRPMChangelog(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skip("rpm is not installed")
	}
	stubBuild(t)
	out := filepath.Join(t.TempDir(), "ferry.rpm")
	if err := writePackage("rpm", "packaging/linux/nfpm.yaml", out, time.Date(2026, 12, 5, 8, 34, 57, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("rpm", "-qp", "--changelog", out).CombinedOutput()
	if want := "* Sat Dec 05 2026 Ferry developers <ferry@ferrydrop.invalid> - 0.1.0-1\n- Release notes: https://github.com/ferrydrop/ferry/releases/tag/v0.1.0\n"; err != nil || !strings.HasPrefix(string(b), want) {
		t.Errorf("rpm --changelog: %v: %q, want it to start with %q", err, b, want)
	}
}

// The .rpm's header names no real machine: BUILDHOST defaults to the
// building machine's host name, which made the release's RPM differ from a
// rebuild of the same commit anywhere else.
func TestRPMBuildHost(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skip("rpm is not installed")
	}
	stubBuild(t)
	out := filepath.Join(t.TempDir(), "ferry.rpm")
	if err := writePackage("rpm", "packaging/linux/nfpm.yaml", out, time.Date(2026, 12, 5, 8, 34, 57, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("rpm", "-qp", "--qf", "%{BUILDHOST}", out).CombinedOutput()
	if host := string(b); err != nil || host != "reproducible" {
		t.Errorf("rpm BUILDHOST: %v: %q, want %q (what Fedora's and openSUSE's reproducible builds write)", err, host, "reproducible")
	}
}
