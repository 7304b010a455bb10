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
	files := []string{"ferry", "ferry-cli", "copyright", "THIRD_PARTY_LICENSES", "io.ferrydrop.ferry.metainfo.xml"}
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
// data.tar.zst a malformed archive) and archive tools all take.
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
