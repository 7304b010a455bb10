package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two builds of the same source in different folders, on different host
// names, give the same bytes:
// the CLI, the .deb, the .rpm, the tarball, the Windows installer and
// portable zip, and the manifests (whose checksums then agree too).
//
// The second build runs in a copy of the tree under another path, on
// another host name. Without FERRY_PACKAGE_FULL it rebuilds the Linux CLI
// only, and both builds' packages carry the same stand-in app binaries and
// Windows CLI (a cold cgo build does not fit in CI); the go command takes
// the packages it compiled for the first build from its cache, whose keys
// hold every input of a compile (and, under -trimpath, no path), and links
// and stamps the CLI again: that shows the CLI's stamps and paths and the
// packaging are reproducible. (With -a, compiling every package again,
// standard library included, this cost one and a half minutes of CI and
// showed only that Go's compiler is deterministic.) FERRY_PACKAGE_FULL=1
// rebuilds with FERRY_BUILD_FLAGS=-a, compiling every package again, and
// compares every CLI, the release app inside the .deb, and the Windows app
// and installer.
func TestReproducible(t *testing.T) {
	a := dist(t)
	if givenDist != "" && !full {
		t.Skip("FERRY_PACKAGE_DIST without FERRY_PACKAGE_FULL=1: nothing rebuilt to compare with")
	}
	root := repoRootOrPanic()
	copyDir := filepath.Join(scratch, "second-build-elsewhere", "src", "ferry")
	copySource(t, root, copyDir)

	epoch, err := time.Parse(time.RFC3339, a.date)
	if err != nil {
		t.Fatal(err)
	}
	distB := filepath.Join(scratch, "dist-b")
	env := []string{
		"DIST=" + distB,
		"FERRY_COMMIT=" + a.commit,
		"SOURCE_DATE_EPOCH=" + strconv.FormatInt(epoch.Unix(), 10),
	}
	targets := []string{"cli", "deb", "rpm", "tarball", "windows", "manifests"}
	compare := []string{"ferry-cli-VERSION-linux-amd64",
		"ferry_VERSION-1_amd64.deb", "ferry-VERSION-1.x86_64.rpm", "Ferry-VERSION-linux-amd64.tar.xz",
		"Ferry-VERSION-windows-amd64-setup.exe", "Ferry-VERSION-windows-amd64-portable.zip",
		"manifests/scoop/ferry.json", "manifests/flatpak/io.ferrydrop.ferry.yml",
		"manifests/winget/manifests/f/FerryDrop/Ferry/VERSION/FerryDrop.Ferry.installer.yaml"}
	if full {
		env = append(env, "FERRY_BUILD_FLAGS=-a")
		compare = append(compare, "ferry-cli-VERSION-windows-amd64.exe", "ferry-cli-VERSION-linux-arm64", "ferry-cli-VERSION-windows-arm64.exe",
			"ferry-cli-VERSION-darwin-amd64", "ferry-cli-VERSION-darwin-arm64", "Ferry-VERSION-windows-amd64.exe")
	} else {
		// The first build's stand-in apps, and its fast xz for the tarball.
		for _, e := range a.env {
			if strings.HasPrefix(e, "FERRY_LINUX_APP=") || strings.HasPrefix(e, "XZ_OPT=") {
				env = append(env, e)
			}
		}
		// The first build's Windows CLI too: package.sh's windows target
		// takes the one in DIST instead of building it again.
		env = append(env, "CLI_TARGETS=linux/amd64", "FERRY_WINDOWS_APP="+a.path("ferry-cli-VERSION-windows-amd64.exe"))
		if err := os.MkdirAll(distB, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(a.path("ferry-cli-VERSION-windows-amd64.exe"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(distB, filepath.Base(a.path("ferry-cli-VERSION-windows-amd64.exe"))), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// On another host name too where it can (root, a UTS namespace): a
	// package that records the machine it was built on (an RPM's BUILDHOST)
	// differs from a rebuild anywhere else.
	if os.Geteuid() == 0 && hasTool("unshare") && hasTool("hostname") {
		run(t, copyDir, env, "unshare", append([]string{"--uts", "sh", "-c", `hostname ferry-second-build && exec "$0" "$@"`, "scripts/package.sh"}, targets...)...)
	} else {
		t.Log("the second build runs on the same host name (needs root and unshare)")
		run(t, copyDir, env, "scripts/package.sh", targets...)
	}

	for _, name := range compare {
		first, second := a.path(name), filepath.Join(distB, strings.TrimPrefix(a.path(name), a.dist+string(filepath.Separator)))
		h1, h2 := sha256File(t, first), sha256File(t, second)
		if h1 != h2 {
			t.Errorf("%s differs between the two builds: %s vs %s", name, h1, h2)
		} else {
			t.Logf("%s: identical, sha256 %s", name, h1)
		}
	}
}

// copySource copies the files git knows in root (tracked, and untracked but
// not ignored: the tree as it is being tested) to dst, or, outside a git
// checkout, every regular file except the build outputs.
func copySource(t *testing.T, root, dst string) {
	t.Helper()
	var files []string
	if out, err := command(t.Context(), root, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && (rel == ".git" || rel == "dist" || rel == "testoutput" || rel == "bin") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				files = append(files, rel)
			}
			return nil
		})
	}
	for _, f := range files {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil {
			continue // deleted in the working tree but still in the index
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// hasTool reports whether name is on PATH.
func hasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
