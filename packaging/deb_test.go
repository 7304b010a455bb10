package packaging

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// debFiles is everything the .deb installs, with its mode.
var debFiles = map[string]string{
	"/usr/bin/ferry":     "-rwxr-xr-x",
	"/usr/bin/ferry-cli": "-rwxr-xr-x",
	"/usr/share/applications/io.ferrydrop.ferry.desktop":  "-rw-r--r--",
	"/usr/share/metainfo/io.ferrydrop.ferry.metainfo.xml": "-rw-r--r--",
	"/usr/share/doc/ferry/copyright":                      "-rw-r--r--",
	"/usr/share/doc/ferry/THIRD_PARTY_LICENSES":           "-rw-r--r--",
	"/usr/share/doc/ferry/changelog.Debian.gz":            "-rw-r--r--",
	"/usr/share/lintian/overrides/ferry":                  "-rw-r--r--",
	"/usr/share/man/man1/ferry.1.gz":                      "-rw-r--r--",
	"/usr/share/man/man1/ferry-cli.1.gz":                  "-rw-r--r--",
}

func init() {
	for _, n := range []int{16, 24, 32, 48, 64, 128, 256, 512} {
		debFiles[fmt.Sprintf("/usr/share/icons/hicolor/%dx%d/apps/io.ferrydrop.ferry.png", n, n)] = "-rw-r--r--"
	}
}

// debRoot installs the .deb with dpkg into a fresh root whose package
// database is a copy of this machine's, so dpkg checks the declared
// dependencies (and their versions) against real installed packages.
func debRoot(t *testing.T, a *artefacts) string {
	t.Helper()
	needTools(t, "dpkg", "dpkg-deb")
	root := t.TempDir()
	db := filepath.Join(root, "var/lib/dpkg")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(db, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status, err := os.ReadFile("/var/lib/dpkg/status")
	if err != nil {
		t.Skipf("no dpkg database to check dependencies against: %v", err)
	}
	if err := os.WriteFile(filepath.Join(db, "status"), status, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, "available"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "dpkg", "--root="+root, "--log=/dev/null", "--no-triggers", "-i", a.path("ferry_VERSION-1_amd64.deb"))
	return root
}

// The .deb's control data, file list and metadata are right, it installs
// with its dependencies satisfied, and those dependencies cover every
// library the app needs.
func TestDebPackage(t *testing.T) {
	a := dist(t)
	deb := a.path("ferry_VERSION-1_amd64.deb")
	needTools(t, "dpkg-deb")

	field := func(name string) string {
		return strings.TrimSpace(run(t, "", nil, "dpkg-deb", "-f", deb, name))
	}
	for name, want := range map[string]string{
		"Package": "ferry", "Version": a.version + "-1", "Architecture": "amd64", "Section": "net",
	} {
		if got := field(name); got != want {
			t.Errorf("control %s = %q, want %q", name, got, want)
		}
	}
	if d := field("Description"); !strings.Contains(d, "file transfer") {
		t.Errorf("control Description = %q", d)
	}
	depends := parseDepends(field("Depends"))

	// The file list: exactly debFiles (plus their folders), root-owned,
	// stamped with the commit's time.
	listing := run(t, "", nil, "dpkg-deb", "-c", deb)
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			t.Fatalf("odd dpkg-deb -c line %q", sc.Text())
		}
		// nfpm writes the changelog it generates with ids but no names.
		if f[1] != "root/root" && f[1] != "0/0" {
			t.Errorf("%s is owned by %s", f[len(f)-1], f[1])
		}
		if day := f[3]; day != a.date[:10] {
			t.Errorf("%s is dated %s, want the commit's day %s", f[len(f)-1], day, a.date[:10])
		}
		p := strings.TrimPrefix(f[len(f)-1], ".")
		if !strings.HasPrefix(f[0], "d") {
			got[p] = f[0]
		}
	}
	for p, mode := range debFiles {
		if got[p] != mode {
			t.Errorf("%s: in the .deb as %q, want %q", p, got[p], mode)
		}
	}
	for p := range got {
		if _, ok := debFiles[p]; !ok {
			t.Errorf("%s: in the .deb but not expected", p)
		}
	}

	root := debRoot(t, a)
	installed := run(t, "", nil, "dpkg", "--root="+root, "-L", "ferry")
	for p := range debFiles {
		if !strings.Contains(installed, p+"\n") {
			t.Errorf("dpkg -L does not list %s", p)
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}

	t.Run("metadata", func(t *testing.T) {
		needTools(t, "appstreamcli", "desktop-file-validate")
		run(t, "", nil, "appstreamcli", "validate", "--no-net", "--explain", filepath.Join(root, "usr/share/metainfo/io.ferrydrop.ferry.metainfo.xml"))
		desktop := filepath.Join(root, "usr/share/applications/io.ferrydrop.ferry.desktop")
		if out := run(t, "", nil, "desktop-file-validate", desktop); strings.TrimSpace(out) != "" {
			t.Errorf("desktop-file-validate: %s", out)
		}
		meta, _ := os.ReadFile(filepath.Join(root, "usr/share/metainfo/io.ferrydrop.ferry.metainfo.xml"))
		if want := fmt.Sprintf(`<release version="%s" date="%s"/>`, a.version, a.date[:10]); !strings.Contains(string(meta), want) {
			t.Errorf("metainfo lacks %s", want)
		}
		if want := "<project_license>Apache-2.0</project_license>"; !strings.Contains(string(meta), want) {
			t.Errorf("metainfo lacks %s", want)
		}
	})

	t.Run("licences", func(t *testing.T) {
		doc := filepath.Join(root, "usr/share/doc/ferry")
		third, err := os.ReadFile(filepath.Join(doc, "THIRD_PARTY_LICENSES"))
		if err != nil {
			t.Fatal(err)
		}
		checkThirdParty(t, string(third), filepath.Join(root, "usr/bin/ferry"), filepath.Join(root, "usr/bin/ferry-cli"))
		checkDebianCopyright(t, filepath.Join(doc, "copyright"))
	})

	t.Run("libraries", func(t *testing.T) {
		checkLibraries(t, filepath.Join(root, "usr/bin/ferry"), depends)
	})

	t.Run("linking", func(t *testing.T) {
		checkLinuxBinaries(t, filepath.Join(root, "usr/bin/ferry"), filepath.Join(root, "usr/bin/ferry-cli"))
	})

	t.Run("version", func(t *testing.T) {
		out := run(t, "", nil, filepath.Join(root, "usr/bin/ferry-cli"), "--version")
		want := fmt.Sprintf("ferry-cli %s (commit %s, %s,", a.version, a.commit, a.date)
		if !strings.HasPrefix(out, want) {
			t.Errorf("ferry-cli --version = %q, want it to start with %q", out, want)
		}
		out = run(t, "", nil, filepath.Join(root, "usr/bin/ferry"), "--version")
		if realApps {
			want = fmt.Sprintf("ferry %s (commit %s, %s,", a.version, a.commit, a.date)
		} else {
			want = "ferry " // the stand-in app is a plain go build: "dev"
		}
		if !strings.HasPrefix(out, want) {
			t.Errorf("ferry --version = %q, want it to start with %q", out, want)
		}
		// Where the locale is C with an encoding (containers, CI), Fyne
		// used to log "Error parsing user locale C" at every start.
		for _, loc := range []string{"C.UTF-8", "C", "POSIX", "de_DE.UTF-8"} {
			env := []string{"LC_ALL=" + loc, "LANG=" + loc, "LANGUAGE="}
			_, stderr, err := runFiles(t, "", env, filepath.Join(root, "usr/bin/ferry"), "--version")
			if err != nil || strings.TrimSpace(stderr) != "" {
				t.Errorf("LC_ALL=%s ferry --version: %v, stderr %q; want nothing on stderr", loc, err, stderr)
			}
		}
	})

	run(t, "", nil, "dpkg", "--root="+root, "--log=/dev/null", "--no-triggers", "-r", "ferry")
	for p := range debFiles {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s is still there after dpkg -r", p)
		}
	}
}

// lintian, Debian's package checker, finds no error in the .deb (what a
// distributor or a repository's upload check runs first), nothing about
// manual pages (both programs have one, and man reads them without a
// warning) and no hardening tag (the app is built as a PIE). Its other
// warnings are logged.
func TestDebLintian(t *testing.T) {
	a := dist(t)
	needTools(t, "lintian")
	// --fail-on none: the tags are read below; a non-zero exit is lintian failing to run.
	stdout, stderr, err := runFiles(t, "", nil, "lintian", "--fail-on", "none", "--tag-display-limit", "0", a.path("ferry_VERSION-1_amd64.deb"))
	if err != nil {
		t.Fatalf("lintian: %v\n%s", err, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		switch {
		case strings.HasPrefix(l, "E: "), strings.Contains(l, "manual-page"), strings.Contains(l, "manpage"), strings.Contains(l, "hardening-"):
			t.Errorf("lintian: %s", l)
		case l != "":
			t.Logf("lintian: %s", l)
		}
	}
}

// checkDebianCopyright parses a copyright file with python3-debian's
// strict DEP-5 parser (warnings are errors) and checks Ferry's own
// paragraph, that every module paragraph carries a licence text, and that
// the Go standard library and runtime have theirs.
func checkDebianCopyright(t *testing.T, path string) {
	t.Helper()
	const py = `
import sys, warnings
warnings.simplefilter("error")
import debian.copyright as c
with open(sys.argv[1]) as f:
    cp = c.Copyright(f, strict=True)
ps = list(cp.all_files_paragraphs())
assert ps[0].files == ("*",) and ps[0].license.synopsis == "Apache-2.0", ps[0]
for p in ps[1:]:
    assert p.license.text.strip(), ("no licence text", p.files)
    assert p.copyright.strip(), ("no copyright", p.files)
assert any("Go standard library" in (p.comment or "") and "The Go Authors" in p.copyright and p.license.synopsis.startswith("BSD-3-clause") for p in ps), "no paragraph for the Go standard library and runtime"
print(len(ps))
`
	python := "/usr/bin/python3" // Debian's, which python3-debian installs into
	if _, err := os.Stat(python); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	if _, _, err := runFiles(t, "", nil, python, "-c", "import debian.copyright"); err != nil {
		t.Skip("python3-debian is not installed (scripts/test.sh installs it)")
	}
	out := run(t, "", nil, python, "-c", py, path)
	t.Logf("copyright: %s file paragraphs, valid DEP-5", strings.TrimSpace(out))
}

// dependency is one "name (op version)" of a Depends field.
type dependency struct{ name, op, version string }

func parseDepends(s string) []dependency {
	var out []dependency
	re := regexp.MustCompile(`^([a-z0-9.+-]+)(?: \(([<>=]+) ([^)]+)\))?$`)
	for _, d := range strings.Split(s, ",") {
		m := re.FindStringSubmatch(strings.TrimSpace(d))
		if m == nil {
			continue
		}
		out = append(out, dependency{m[1], m[2], m[3]})
	}
	return out
}

// checkLibraries checks that every library the app links (NEEDED) or GLFW
// loads at run time on X11 (the libX* names in the binary) comes from a
// declared dependency, and that libc6's version covers the newest GLIBC_
// symbol version the app uses.
func checkLibraries(t *testing.T, bin string, depends []dependency) {
	needTools(t, "dpkg", "ldconfig")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`libX[A-Za-z0-9_-]*\.so\.[0-9]+`).FindAll(raw, -1) {
		libs = append(libs, string(m))
	}
	slices.Sort(libs)
	libs = slices.Compact(libs)
	declared := map[string]dependency{}
	for _, d := range depends {
		declared[d.name] = d
	}
	cache := run(t, "", nil, "ldconfig", "-p")
	for _, lib := range libs {
		path := ""
		for _, l := range strings.Split(cache, "\n") {
			if f := strings.Fields(l); len(f) >= 4 && f[0] == lib && strings.Contains(l, "x86-64") {
				path = f[len(f)-1]
				break
			}
		}
		if path == "" {
			t.Errorf("%s: not in the linker cache of this machine", lib)
			continue
		}
		pkg, err := owner(path)
		if err != nil {
			t.Errorf("%s (%s): %v", lib, path, err)
			continue
		}
		if _, ok := declared[pkg]; !ok {
			t.Errorf("%s comes from %s, which the .deb does not depend on", lib, pkg)
		} else {
			t.Logf("%s <- %s", lib, pkg)
		}
	}

	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, s := range syms {
		v, ok := strings.CutPrefix(s.Version, "GLIBC_")
		if ok && (newest == "" || versionLess(newest, v)) {
			newest = v
		}
	}
	libc := declared["libc6"]
	if newest != "" && (libc.op != ">=" || versionLess(libc.version, newest)) {
		t.Errorf("the app needs GLIBC_%s; the .deb declares libc6 %s %s", newest, libc.op, libc.version)
	}
}

// owner is the Debian package that installed path (following symlinks).
func owner(path string) (string, error) {
	var last error
	for _, p := range []string{path, resolve(path)} {
		out, err := exec.Command("dpkg", "-S", p).Output()
		if err == nil {
			name, _, _ := strings.Cut(string(out), ":")
			return strings.TrimSpace(name), nil
		}
		last = err
	}
	return "", fmt.Errorf("dpkg -S: %w", last)
}

func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		// dpkg records /usr/lib paths; merged-/usr symlinks make /lib ones.
		return r
	}
	return p
}

// versionLess compares dotted numeric versions ("2.34" < "2.35").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// The installed app starts under Xvfb and draws its window: a screenshot of
// it must show real content (text, the theme's accent colour), not a blank
// or black rectangle.
func TestDebAppDrawsWindow(t *testing.T) {
	a := dist(t)
	needTools(t, "Xvfb", "dbus-run-session", "xdotool", "import")
	root := debRoot(t, a)
	display := startXvfb(t)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{
		"device_name": "Packaging Test", "download_dir": filepath.Join(dir, "in"), "policy": "everyone",
	})
	if err := os.WriteFile(filepath.Join(cfg, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(dir, "status.json")
	env := []string{
		"DISPLAY=" + display, "HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"),
		"FERRY_SMOKE_STATUS=" + status, // written once the app receives and its window is up
	}
	ready := func() bool { _, err := os.Stat(status); return err == nil }
	appDrawsWindow(t, dir, env, "Ferry — Packaging Test", "deb-app-window.png", ready,
		"dbus-run-session", "--", filepath.Join(root, "usr/bin/ferry"), "--config", cfg)

	// Desktops match the window to its launcher by its X11 class, which the
	// desktop entry names: otherwise the dock shows an unnamed app beside it.
	entry, err := os.ReadFile(filepath.Join(root, "usr/share/applications/io.ferrydrop.ferry.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^StartupWMClass=(.+)$`).FindSubmatch(entry)
	if m == nil {
		t.Fatal("the desktop entry has no StartupWMClass")
	}
	if w, _, err := runFiles(t, dir, env, "xdotool", "search", "--onlyvisible", "--class", "^"+regexp.QuoteMeta(string(m[1]))+"$"); err != nil || strings.TrimSpace(w) == "" {
		t.Errorf("no visible window of class %q (the desktop entry's StartupWMClass): %v", m[1], err)
	}
}

// appDrawsWindow starts argv (the app, under dbus-run-session or Wine) with
// env (which names the X display), waits until ready says so and a visible
// window titled title appears, and then until a screenshot of that window
// shows real content. FERRY_PACKAGE_OUT=DIR keeps the screenshot as DIR/shotName.
func appDrawsWindow(t *testing.T, dir string, env []string, title, shotName string, ready func() bool, argv ...string) {
	t.Helper()
	app := command(t.Context(), dir, env, argv[0], argv[1:]...)
	logBuf := &lockedWriter{}
	app.Stdout, app.Stderr = logBuf, logBuf
	// Its own process group: killing dbus-run-session (or wine) alone could
	// leave the app running, writing into the temp dir being removed.
	app.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- app.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-app.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	var win string
	poll(t, 60*time.Second, "the app's window", exited, logBuf, func() bool {
		if ready != nil && !ready() {
			return false
		}
		w, _, err := runFiles(t, dir, env, "xdotool", "search", "--onlyvisible", "--name", "^"+title+"$")
		win, _, _ = strings.Cut(strings.TrimSpace(w), "\n")
		return err == nil && win != ""
	})

	shot := filepath.Join(dir, "window.png")
	var last contentStats
	var lastErr error
	defer func() {
		if t.Failed() {
			t.Logf("last screenshot: %+v (import: %v)", last, lastErr)
		}
		if out := os.Getenv("FERRY_PACKAGE_OUT"); out != "" {
			if b, err := os.ReadFile(shot); err == nil {
				os.WriteFile(filepath.Join(out, shotName), b, 0o644)
			}
		}
	}()
	poll(t, 30*time.Second, "the window to draw its content", exited, logBuf, func() bool {
		_, stderr, err := runFiles(t, dir, env, "import", "-window", win, shot)
		if lastErr = err; err != nil {
			lastErr = fmt.Errorf("%w: %s", err, stderr)
			return false
		}
		last = screenshotStats(t, shot)
		return last.looksDrawn()
	})
	t.Logf("window %dx%d: %d colours, background %.0f%%, %d accent pixels, %d text pixels",
		last.w, last.h, last.colours, 100*last.dominant, last.accent, last.text)
}

// poll calls ok every 100 ms until it returns true, the app exits, or the
// deadline passes (a readiness wait with a deadline, not a fixed sleep).
func poll(t *testing.T, limit time.Duration, what string, exited chan error, log *lockedWriter, ok func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the app exited (%v) before %s:\n%s", err, what, log.String())
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; app output:\n%s", what, log.String())
		case <-tick.C:
		}
	}
}

// startXvfb starts an X server on a free display and returns its name.
func startXvfb(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	x := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{w}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		x.Process.Kill()
		x.Wait()
	})
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case n := <-got:
		if n == "" {
			t.Fatal("Xvfb did not report a display")
		}
		return ":" + n
	case <-time.After(30 * time.Second):
		t.Fatal("Xvfb did not start")
	}
	return ""
}

// contentStats summarises a screenshot.
type contentStats struct {
	w, h     int
	colours  int     // distinct colours
	dominant float64 // share of the most common colour (the background)
	accent   int     // strongly saturated pixels: the theme's primary colour on buttons and tabs
	text     int     // pixels far in brightness from the background: glyphs, icons, separators
}

// looksDrawn: a blank, black or half-drawn window fails at least one of these.
// (The background's share depends on how many devices discovery finds on the
// machine's network, so its bound is loose; the others carry the check.)
func (s contentStats) looksDrawn() bool {
	return s.w >= 400 && s.h >= 300 && s.colours >= 64 && s.dominant < 0.97 && s.accent >= 500 && s.text >= 2000
}

func screenshotStats(t *testing.T, path string) contentStats {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return contentStats{}
	}
	b := img.Bounds()
	s := contentStats{w: b.Dx(), h: b.Dy()}
	counts := map[[3]uint8]int{}
	lum := func(r, g, b uint8) int { return (299*int(r) + 587*int(g) + 114*int(b)) / 1000 }
	var px [][3]uint8
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}
			counts[c]++
			px = append(px, c)
		}
	}
	s.colours = len(counts)
	var bg [3]uint8
	best := 0
	for c, n := range counts {
		if n > best {
			bg, best = c, n
		}
	}
	if len(px) == 0 {
		return s
	}
	s.dominant = float64(best) / float64(len(px))
	bgLum := lum(bg[0], bg[1], bg[2])
	for _, c := range px {
		hi := max(c[0], c[1], c[2])
		lo := min(c[0], c[1], c[2])
		if hi >= 128 && int(hi-lo)*2 > int(hi) { // saturation > 0.5, not dark
			s.accent++
		}
		if d := lum(c[0], c[1], c[2]) - bgLum; d > 100 || d < -100 {
			s.text++
		}
	}
	return s
}

// The installed ferry-cli sends a file to a ferry-cli built from source.
func TestDebCLISendsToSourceReceiver(t *testing.T) {
	a := dist(t)
	root := debRoot(t, a)
	src := sourceCLI(t)
	in := t.TempDir()
	r, why := startReceiver(t, nil, src, "receive", "--config", t.TempDir(), "--dir", in,
		"--listen", "127.0.0.1:0", "--no-discovery", "--localsend=false", "--once", "--accept", "all")
	if r == nil {
		t.Fatalf("receiver did not start: %s", why)
	}
	file := payload(t, "from the deb.bin", 3<<20)
	run(t, "", nil, filepath.Join(root, "usr/bin/ferry-cli"), "send", "--config", t.TempDir(), "--to", r.quic, file)
	r.wait(t)
	sameFile(t, file, filepath.Join(in, "from the deb.bin"))
}
