package packaging

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// full turns on the slow checks: the release app is built for Linux and
// Windows (cold cgo builds: ~5 and ~8 minutes) instead of standing in a
// plain `go build` of the app (Linux) and the CLI (in the Windows installer),
// and the reproducibility check rebuilds everything, app included, without
// the build cache.
var full = os.Getenv("FERRY_PACKAGE_FULL") == "1"

// givenDist, from FERRY_PACKAGE_DIST, is a folder a complete
// `scripts/package.sh` run filled: the tests check those artefacts instead of
// building their own (and rebuild only for the reproducibility check, with
// FERRY_PACKAGE_FULL=1, from this checkout: build the dist from the same commit).
var givenDist = os.Getenv("FERRY_PACKAGE_DIST")

// realApps: the artefacts hold the release apps, not stand-ins.
var realApps = full || givenDist != ""

// scratch holds everything this test run builds; removed at the end.
var scratch string

func TestMain(m *testing.M) {
	var err error
	scratch, err = os.MkdirTemp("", "ferry-packaging-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopWine()
	if os.Getenv("FERRY_PACKAGE_KEEP") == "" {
		os.RemoveAll(scratch)
	} else {
		fmt.Fprintln(os.Stderr, "packaging: kept", scratch)
	}
	os.Exit(code)
}

// repoRoot is the repository's top folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// artefacts is what scripts/package.sh built for this test run.
type artefacts struct {
	dist    string // the DIST folder
	version string // FyneApp.toml's Version
	commit  string // what the binaries are stamped with
	date    string // the commit's date, RFC 3339
	env     []string
	log     string // package.sh's output
}

func (a *artefacts) path(name string) string {
	return filepath.Join(a.dist, strings.ReplaceAll(name, "VERSION", a.version))
}

var (
	buildOnce sync.Once
	built     *artefacts
	buildErr  error
)

// needTools skips the test when a tool it needs is missing (scripts/test.sh
// installs them all on Debian and Ubuntu).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test.sh installs what the packaging checks need)", tool)
		}
	}
}

// buildTools are what package.sh needs for the targets the tests build.
var buildTools = []string{"go", "gcc", "x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-windres", "makensis", "xz", "tar"}

// checkThirdParty fails the test unless the third-party licence file text
// names every module each binary links (as its build info records them),
// with its version: the file must cover what is really inside.
func checkThirdParty(t *testing.T, text string, bins ...string) {
	t.Helper()
	if !strings.Contains(text, "Go standard library and runtime") || !strings.Contains(text, "Copyright") {
		t.Errorf("the third-party licence file lacks the Go runtime's licence or any copyright line")
	}
	for _, bin := range bins {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		if len(bi.Deps) == 0 {
			t.Errorf("%s: no modules in its build info", bin)
		}
		for _, m := range bi.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(m.Path) + ` +` + regexp.QuoteMeta(m.Version) + ` `).MatchString(text) {
				t.Errorf("%s links %s %s, which the third-party licence file does not list", filepath.Base(bin), m.Path, m.Version)
			}
		}
	}
}

// licenseText is the repository's LICENSE.
func licenseText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Apache License") || !strings.Contains(string(b), "Version 2.0, January 2004") {
		t.Fatal("LICENSE is not the Apache License 2.0")
	}
	return string(b)
}

// sameText fails unless the file at path holds want.
func sameText(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if string(b) != want {
		t.Errorf("%s differs from what it should hold (%d bytes, want %d)", path, len(b), len(want))
	}
}

// dist builds the artefacts once per test run: every CLI, the .deb, the
// tarball and the Windows installer. Without FERRY_PACKAGE_FULL the Linux app
// is a plain `go build` (a warm cache from scripts/test.sh's build serves it)
// and the installer carries the Windows CLI in the app's place, because the
// app's cold cgo builds do not fit in CI; the installer's own work (files,
// shortcut, registry, uninstaller) is the same.
func dist(t *testing.T) *artefacts {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the packaging checks build every artefact")
	}
	needTools(t, buildTools...)
	buildOnce.Do(func() { built, buildErr = buildArtefacts(repoRootOrPanic()) })
	if buildErr != nil {
		t.Fatalf("building the artefacts: %v", buildErr)
	}
	return built
}

func repoRootOrPanic() string {
	root, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	return root
}

func buildArtefacts(root string) (*artefacts, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if givenDist != "" {
		return readDist(ctx, givenDist)
	}
	a := &artefacts{dist: filepath.Join(scratch, "dist")}
	var err error
	if a.version, a.commit, a.date, a.env, err = stamps(ctx, root); err != nil {
		return nil, err
	}
	a.env = append(a.env, "DIST="+a.dist)
	if !full {
		// Fast xz for the tarball: its compression level is no packaging question.
		a.env = append(a.env, "XZ_OPT=-1")
		// The CLIs the other checks use, and macOS's two; linux/arm64 and
		// windows/arm64 differ from their amd64 builds only in GOARCH and
		// cost two more cold compiles: the full run builds them.
		a.env = append(a.env, "CLI_TARGETS="+strings.Join(quickCLITargets, " "))
		app := filepath.Join(scratch, "app", "ferry")
		// Stripped as the release app is (-s -w only changes the link: the
		// warm build cache still serves it); lintian calls an unstripped
		// binary an error. A PIE as the release app is (package.sh takes
		// no other): its packages are checked for it. -buildmode=pie
		// compiles the GUI toolkit again once (minutes on a cold cache).
		if out, err := command(ctx, root, nil, "go", "build", "-buildmode=pie", "-ldflags=-s -w", "-o", app, ".").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build the app: %v\n%s", err, out)
		}
		a.env = append(a.env, "FERRY_LINUX_APP="+app)
	}
	out, err := command(ctx, root, a.env, "scripts/package.sh", "cli", "deb", "rpm", "tarball").CombinedOutput()
	a.log = string(out)
	if err != nil {
		return nil, fmt.Errorf("package.sh cli deb rpm tarball: %v\n%s", err, out)
	}
	winEnv := a.env
	if !full {
		winEnv = append(winEnv, "FERRY_WINDOWS_APP="+a.path("ferry-cli-VERSION-windows-amd64.exe"))
	}
	out, err = command(ctx, root, winEnv, "scripts/package.sh", "windows", "manifests").CombinedOutput()
	a.log += string(out)
	if err != nil {
		return nil, fmt.Errorf("package.sh windows manifests: %v\n%s", err, out)
	}
	return a, nil
}

// readDist takes a finished dist folder's stamps from its Linux CLI.
func readDist(ctx context.Context, dir string) (*artefacts, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	clis, _ := filepath.Glob(filepath.Join(dir, "ferry-cli-*-linux-amd64"))
	if len(clis) != 1 {
		return nil, fmt.Errorf("%s: want one ferry-cli-*-linux-amd64, found %d", dir, len(clis))
	}
	out, err := command(ctx, "", nil, clis[0], "version", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s version: %w", clis[0], err)
	}
	var v map[string]string
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("%s version --json: %w", clis[0], err)
	}
	return &artefacts{dist: dir, version: v["version"], commit: v["commit"], date: v["date"]}, nil
}

// quickCLITargets are the CLIs built without FERRY_PACKAGE_FULL.
var quickCLITargets = []string{"linux/amd64", "windows/amd64", "darwin/amd64", "darwin/arm64"}

// stamps returns the version, commit and date package.sh stamps, and the
// environment that makes it use them: from git, or fixed ones outside a
// checkout (a source tarball).
func stamps(ctx context.Context, root string) (version, commit, date string, env []string, err error) {
	toml, err := os.ReadFile(filepath.Join(root, "FyneApp.toml"))
	if err != nil {
		return "", "", "", nil, err
	}
	m := regexp.MustCompile(`(?m)^Version *= *"(.*)"`).FindSubmatch(toml)
	if m == nil {
		return "", "", "", nil, fmt.Errorf("no Version in FyneApp.toml")
	}
	version = string(m[1])
	out, gitErr := command(ctx, root, nil, "git", "log", "-1", "--format=%h %ct").Output()
	if gitErr != nil {
		commit, epoch := "notgit", int64(1700000000)
		return version, commit, time.Unix(epoch, 0).UTC().Format(time.RFC3339), []string{"FERRY_COMMIT=" + commit, "SOURCE_DATE_EPOCH=" + strconv.FormatInt(epoch, 10)}, nil
	}
	f := strings.Fields(string(out))
	epoch, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", "", "", nil, err
	}
	head, err := command(ctx, root, nil, "git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "", "", "", nil, err
	}
	commit = strings.TrimSpace(string(head))
	if st, _ := command(ctx, root, nil, "git", "status", "--porcelain", "--untracked-files=no").Output(); len(bytes.TrimSpace(st)) > 0 {
		commit += "-dirty"
	}
	return version, commit, time.Unix(epoch, 0).UTC().Format(time.RFC3339), nil, nil
}

// command prepares name args in dir with the test's environment plus env.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a command to completion, fails the test if it fails, and returns
// its standard output. Output goes through files, not pipes: a Wine program
// can leave wineserver and its services running with the pipe's end, and
// Wait would wait for them.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runFiles(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// runFiles runs a command with its output in temporary files.
func runFiles(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	tmp := t.TempDir()
	outF, err := os.Create(filepath.Join(tmp, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(tmp, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd := command(t.Context(), dir, env, name, args...)
	cmd.Stdout, cmd.Stderr = outF, errF
	err = cmd.Run()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return string(o), string(e), err
}

// sha256File is the hex SHA-256 of a file.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// receiver is a `ferry-cli receive --once` running as a child process.
type receiver struct {
	quic, tcp string
	stderr    string // its stderr file
	exited    chan struct{}
	err       error // Wait's result, once exited is closed
}

// startReceiver starts argv (a ferry-cli receive command line, maybe under
// Wine) and waits for its "listening quic=... tcp=..." line. It returns
// nil and what the receiver said if it exits before listening.
func startReceiver(t *testing.T, env []string, argv ...string) (*receiver, string) {
	t.Helper()
	cmd := command(t.Context(), "", env, argv[0], argv[1:]...)
	// Files, not Go-managed pipes, so Wait returns when the receiver exits
	// even if a Wine helper process holds its output open.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{stderr: filepath.Join(t.TempDir(), "stderr"), exited: make(chan struct{})}
	errF, err := os.Create(r.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = pw, errF
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "listening ") {
				select {
				case lines <- l:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.exited
		pr.Close() // ends the scanner even if a Wine helper keeps the pipe open
	})
	var line string
	select {
	case line = <-lines:
	case <-r.exited:
		select {
		case line = <-lines: // said it and exited at once
		default:
			return nil, fmt.Sprintf("%v: %s", r.err, r.stderrText())
		}
	case <-t.Context().Done():
		t.Fatal("the receiver never said it was listening")
	}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "quic":
			r.quic = v
		case "tcp":
			r.tcp = v
		}
	}
	return r, ""
}

func (r *receiver) stderrText() string {
	b, _ := os.ReadFile(r.stderr)
	return string(b)
}

// wait waits for the receiver to exit by itself (--once) and fails the test
// if it did not succeed.
func (r *receiver) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
		if r.err != nil {
			t.Fatalf("receiver: %v\n%s", r.err, r.stderrText())
		}
	case <-t.Context().Done():
		t.Fatal("receiver did not finish")
	}
}

// lockedWriter collects a child's output so it can be read while the child
// still writes.
type lockedWriter struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// sourceCLI is ferry-cli built from this checkout the ordinary way, the
// "other side" of the transfer tests.
func sourceCLI(t *testing.T) string {
	t.Helper()
	sourceCLIOnce.Do(func() {
		bin := filepath.Join(scratch, "source-cli", "ferry-cli")
		out, err := command(context.Background(), repoRootOrPanic(), nil, "go", "build", "-o", bin, "./cmd/ferry-cli").CombinedOutput()
		if err != nil {
			sourceCLIErr = fmt.Errorf("go build ./cmd/ferry-cli: %v\n%s", err, out)
		}
		sourceCLIPath = bin
	})
	if sourceCLIErr != nil {
		t.Fatal(sourceCLIErr)
	}
	return sourceCLIPath
}

var (
	sourceCLIOnce sync.Once
	sourceCLIPath string
	sourceCLIErr  error
)

// payload writes a file of n pseudo-random bytes (seeded, so a failure can
// be reproduced) and returns its path.
func payload(t *testing.T, name string, n int) string {
	t.Helper()
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sameFile fails the test unless got has want's bytes.
func sameFile(t *testing.T, want, got string) {
	t.Helper()
	if a, b := sha256File(t, want), sha256File(t, got); a != b {
		t.Fatalf("%s differs from what was sent (%s vs %s)", got, b, a)
	}
}
