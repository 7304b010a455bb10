package packaging

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fedoraRequires is what the RPM must require: Fedora's names for the
// libraries the .deb depends on (TestDebPackage checks that list against the
// app's binary).
var fedoraRequires = []string{
	"glibc >= 2.34", "libX11", "libX11-xcb", "libXcursor", "libXi", "libXinerama",
	"libXrandr", "libXrender", "libXxf86vm", "libglvnd-glx",
}

// The RPM's header (name, version, licence, build time), its requirements
// in Fedora's names, its files and %license files, and an install into an
// empty root with rpm --root --nodeps (Fedora's packages cannot be installed
// here to satisfy the requirements) and its removal.
func TestRPMPackage(t *testing.T) {
	a := dist(t)
	needTools(t, "rpm")
	pkg := a.path("ferry-VERSION-1.x86_64.rpm")
	query := func(args ...string) string {
		return run(t, "", nil, "rpm", append(append([]string{"-qp"}, args...), pkg)...)
	}
	header := query("--queryformat", "%{NAME}|%{VERSION}|%{RELEASE}|%{ARCH}|%{LICENSE}|%{BUILDTIME}|%{URL}")
	commit, err := time.Parse(time.RFC3339, a.date)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"ferry", a.version, "1", "x86_64", "Apache-2.0",
		strconv.FormatInt(commit.Unix(), 10), "https://github.com/ferrydrop/ferry"}, "|")
	if header != want {
		t.Errorf("rpm header %q, want %q", header, want)
	}

	var requires []string
	for _, l := range strings.Split(strings.TrimSpace(query("-R")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "rpmlib(") {
			requires = append(requires, l)
		}
	}
	slices.Sort(requires)
	if !slices.Equal(requires, fedoraRequires) {
		t.Errorf("rpm -qpR: %q\nwant %q", requires, fedoraRequires)
	}

	wantFiles := map[string]bool{
		"/usr/share/licenses/ferry/LICENSE":              true,
		"/usr/share/licenses/ferry/THIRD_PARTY_LICENSES": true,
	}
	for p := range debFiles {
		if !strings.HasPrefix(p, "/usr/share/doc/") && !strings.HasPrefix(p, "/usr/share/lintian/") { // Debian's copyright file, doc folder and lintian overrides
			wantFiles[p] = true
		}
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(query("-l")), "\n") {
		got[l] = true
	}
	for p := range wantFiles {
		if !got[p] {
			t.Errorf("the RPM lacks %s", p)
		}
	}
	for p := range got {
		if !wantFiles[p] && !holdsAny(p, wantFiles) {
			t.Errorf("%s: in the RPM but not expected", p)
		}
	}
	licenses := strings.Fields(query("-L"))
	slices.Sort(licenses)
	if want := []string{"/usr/share/licenses/ferry/LICENSE", "/usr/share/licenses/ferry/THIRD_PARTY_LICENSES"}; !slices.Equal(licenses, want) {
		t.Errorf("%%license files %q, want %q", licenses, want)
	}

	root := t.TempDir()
	run(t, "", nil, "rpm", "--root", root, "--initdb")
	run(t, "", nil, "rpm", "--root", root, "--nodeps", "-i", pkg)
	for p := range wantFiles {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if out := run(t, "", nil, filepath.Join(root, "usr/bin/ferry-cli"), "--version"); !strings.Contains(out, a.version) {
		t.Errorf("installed ferry-cli --version = %q", out)
	}
	sameText(t, filepath.Join(root, "usr/share/licenses/ferry/LICENSE"), licenseText(t))
	third, err := os.ReadFile(filepath.Join(root, "usr/share/licenses/ferry/THIRD_PARTY_LICENSES"))
	if err != nil {
		t.Fatal(err)
	}
	checkThirdParty(t, string(third), filepath.Join(root, "usr/bin/ferry"), filepath.Join(root, "usr/bin/ferry-cli"))
	checkLinuxBinaries(t, filepath.Join(root, "usr/bin/ferry"), filepath.Join(root, "usr/bin/ferry-cli"))
	run(t, "", nil, "rpm", "--root", root, "-e", "ferry")
	for p := range wantFiles {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s is still there after rpm -e", p)
		}
	}
}

// holdsAny reports whether dir is a folder above one of files.
func holdsAny(dir string, files map[string]bool) bool {
	for f := range files {
		if strings.HasPrefix(f, dir+"/") {
			return true
		}
	}
	return false
}
