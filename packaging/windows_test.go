package packaging

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/pe"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"
)

// Resource types (winuser.h).
const (
	rtIcon      = 3
	rtGroupIcon = 14
	rtVersion   = 16
	rtManifest  = 24
)

// The Windows executables carry Ferry's icon and a version block with the
// release version, as Explorer shows them; the installer too.
func TestWindowsResources(t *testing.T) {
	a := dist(t)
	for _, tc := range []struct {
		file, original, description string
		gui, manifest               bool
	}{
		{"ferry-cli-VERSION-windows-amd64.exe", "ferry-cli.exe", "Ferry command-line client", false, true},
		{"Ferry-VERSION-windows-amd64.exe", "ferry.exe", "Ferry", true, true},
		{"Ferry-VERSION-windows-amd64-setup.exe", "", "Ferry installer", true, false},
	} {
		t.Run(strings.ReplaceAll(tc.file, "VERSION", "V"), func(t *testing.T) {
			if tc.original == "ferry.exe" && !realApps {
				// The stand-in (the CLI) is what TestCLIBinaries checks already.
				t.Skip("FERRY_PACKAGE_FULL=1 builds the real app")
			}
			f, err := pe.Open(a.path(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
			if !ok || f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
				t.Fatalf("not a 64-bit x86-64 PE (machine %#x)", f.Machine)
			}
			wantSub := uint16(pe.IMAGE_SUBSYSTEM_WINDOWS_CUI)
			if tc.gui {
				wantSub = pe.IMAGE_SUBSYSTEM_WINDOWS_GUI
			}
			if oh.Subsystem != wantSub {
				t.Errorf("subsystem %d, want %d", oh.Subsystem, wantSub)
			}
			res, err := resources(f)
			if err != nil {
				t.Fatal(err)
			}
			checkIcons(t, res)
			if len(res[rtVersion]) != 1 {
				t.Fatalf("%d version resources, want 1", len(res[rtVersion]))
			}
			fixed, strs, err := parseVersionInfo(res[rtVersion][0])
			if err != nil {
				t.Fatal(err)
			}
			want4 := [4]uint16{}
			fmt.Sscanf(a.version, "%d.%d.%d", &want4[0], &want4[1], &want4[2])
			if fixed != want4 {
				t.Errorf("fixed file version %v, want %v", fixed, want4)
			}
			if strs["ProductName"] != "Ferry" || strs["FileDescription"] != tc.description ||
				!strings.HasPrefix(strs["ProductVersion"], a.version) {
				t.Errorf("version strings %v", strs)
			}
			if tc.original != "" {
				if strs["OriginalFilename"] != tc.original || strs["ProductVersion"] != a.version+" ("+a.commit+")" {
					t.Errorf("version strings %v", strs)
				}
			}
			if tc.manifest {
				if len(res[rtManifest]) != 1 || !bytes.Contains(res[rtManifest][0], []byte(`level="asInvoker"`)) {
					t.Errorf("no manifest asking for asInvoker")
				}
			}
		})
	}
}

// checkIcons: one icon group whose entries are all present, with a 256 px
// image (Explorer's large views) stored as PNG.
func checkIcons(t *testing.T, res map[uint32][][]byte) {
	t.Helper()
	if len(res[rtGroupIcon]) != 1 {
		t.Fatalf("%d icon groups, want 1", len(res[rtGroupIcon]))
	}
	g := res[rtGroupIcon][0]
	if len(g) < 6 {
		t.Fatal("short icon group")
	}
	n := int(binary.LittleEndian.Uint16(g[4:]))
	if n < 4 || len(g) < 6+14*n || len(res[rtIcon]) < n {
		t.Fatalf("icon group of %d entries, %d icons", n, len(res[rtIcon]))
	}
	var big bool
	for i := 0; i < n; i++ {
		if g[6+14*i] == 0 { // width 0 means 256
			big = true
		}
	}
	var pngs int
	for _, ic := range res[rtIcon] {
		if bytes.HasPrefix(ic, []byte("\x89PNG")) {
			pngs++
		}
	}
	if !big || pngs == 0 {
		t.Errorf("no 256 px PNG icon (%d entries, %d PNG)", n, pngs)
	}
}

// resources reads a PE file's resource tree: type -> the data of every
// name and language under it.
func resources(f *pe.File) (map[uint32][][]byte, error) {
	s := f.Section(".rsrc")
	if s == nil {
		return nil, errors.New("no .rsrc section")
	}
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	out := map[uint32][][]byte{}
	// entries lists a directory's (id or name offset, offset) pairs.
	entries := func(off uint32) ([][2]uint32, error) {
		if int(off)+16 > len(data) {
			return nil, errors.New("resource directory out of range")
		}
		n := int(binary.LittleEndian.Uint16(data[off+12:])) + int(binary.LittleEndian.Uint16(data[off+14:]))
		if int(off)+16+8*n > len(data) {
			return nil, errors.New("resource entries out of range")
		}
		var es [][2]uint32
		for i := 0; i < n; i++ {
			e := data[int(off)+16+8*i:]
			es = append(es, [2]uint32{binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])})
		}
		return es, nil
	}
	const subdir = 0x80000000
	types, err := entries(0)
	if err != nil {
		return nil, err
	}
	for _, ty := range types {
		if ty[1]&subdir == 0 {
			return nil, errors.New("type entry is not a directory")
		}
		names, err := entries(ty[1] &^ subdir)
		if err != nil {
			return nil, err
		}
		for _, nm := range names {
			langs, err := entries(nm[1] &^ subdir)
			if err != nil {
				return nil, err
			}
			for _, lg := range langs {
				de := lg[1]
				if int(de)+16 > len(data) {
					return nil, errors.New("data entry out of range")
				}
				rva := binary.LittleEndian.Uint32(data[de:])
				size := binary.LittleEndian.Uint32(data[de+4:])
				start := int64(rva) - int64(s.VirtualAddress)
				if start < 0 || start+int64(size) > int64(len(data)) {
					return nil, errors.New("resource data out of range")
				}
				out[ty[0]] = append(out[ty[0]], data[start:start+int64(size)])
			}
		}
	}
	return out, nil
}

// parseVersionInfo reads a VS_VERSIONINFO block: the fixed file version
// (four 16-bit parts) and the StringFileInfo strings of its first table.
func parseVersionInfo(b []byte) (fixed [4]uint16, strs map[string]string, err error) {
	strs = map[string]string{}
	var walk func(b []byte, depth int) error
	walk = func(b []byte, depth int) error {
		for len(b) >= 6 {
			length := int(binary.LittleEndian.Uint16(b))
			valueLen := int(binary.LittleEndian.Uint16(b[2:]))
			typ := binary.LittleEndian.Uint16(b[4:])
			if length < 6 || length > len(b) {
				return errors.New("bad version node length")
			}
			node := b[:length]
			key, rest := utf16z(node[6:])
			off := align4(length - len(rest))
			value := []byte{}
			if typ == 1 { // text: valueLen counts UTF-16 units
				valueLen *= 2
			}
			if off+valueLen <= length {
				value = node[off : off+valueLen]
			}
			switch {
			case key == "VS_VERSION_INFO" && len(value) >= 52:
				if binary.LittleEndian.Uint32(value) != 0xFEEF04BD {
					return errors.New("bad VS_FIXEDFILEINFO signature")
				}
				ms, ls := binary.LittleEndian.Uint32(value[8:]), binary.LittleEndian.Uint32(value[12:])
				fixed = [4]uint16{uint16(ms >> 16), uint16(ms), uint16(ls >> 16), uint16(ls)}
			case depth == 3 && typ == 1:
				v, _ := utf16z(value)
				strs[key] = v
			}
			if err := walk(node[min(align4(off+valueLen), length):], depth+1); err != nil {
				return err
			}
			b = b[min(align4(length), len(b)):]
		}
		return nil
	}
	err = walk(b, 0)
	return fixed, strs, err
}

// utf16z decodes a NUL-terminated UTF-16LE string and returns the bytes after it.
func utf16z(b []byte) (string, []byte) {
	var u []uint16
	for len(b) >= 2 {
		c := binary.LittleEndian.Uint16(b)
		b = b[2:]
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u)), b
}

func align4(n int) int { return (n + 3) &^ 3 }

// wine is a Wine prefix with the bcryptprimitives.dll stand-in Go >= 1.22
// binaries need under Wine 8 (see packaging/wine).
type wine struct{ prefix string }

var (
	wineOnce sync.Once
	winePfx  *wine
	wineErr  error
)

func (w *wine) env() []string { return []string{"WINEPREFIX=" + w.prefix, "WINEDEBUG=-all"} }

// winPath is how a Windows program under Wine names a Linux path.
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// newWine sets up the shared prefix once per test run.
func newWine(t *testing.T) *wine {
	t.Helper()
	needTools(t, "wine", "wineboot", "wineserver", "x86_64-w64-mingw32-gcc")
	wineOnce.Do(func() {
		w := &wine{prefix: filepath.Join(scratch, "wine")}
		ctx := context.Background()
		dll := filepath.Join(scratch, "bcryptprimitives.dll")
		src := filepath.Join(repoRootOrPanic(), "packaging", "wine")
		if out, err := command(ctx, "", nil, "x86_64-w64-mingw32-gcc", "-shared", "-O2", "-o", dll,
			filepath.Join(src, "bcryptprimitives.c"), filepath.Join(src, "bcryptprimitives.def"), "-ladvapi32").CombinedOutput(); err != nil {
			wineErr = fmt.Errorf("building the bcryptprimitives.dll stand-in: %v\n%s", err, out)
			return
		}
		// A wineserver that outlives each wine command (for up to two minutes
		// without clients, so none is left behind for long), started with its
		// output in a file: the services wineboot starts inherit it, and
		// would otherwise hold a test's pipes open.
		if err := os.MkdirAll(w.prefix, 0o755); err != nil {
			wineErr = err
			return
		}
		logF, err := os.Create(filepath.Join(scratch, "wine.log"))
		if err != nil {
			wineErr = err
			return
		}
		defer logF.Close()
		for _, argv := range [][]string{{"wineserver", "-p120"}, {"wineboot", "-i"}} {
			cmd := command(ctx, "", w.env(), argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr = logF, logF
			if err := cmd.Run(); err != nil {
				log, _ := os.ReadFile(logF.Name())
				wineErr = fmt.Errorf("%s: %v\n%s", argv[0], err, log)
				return
			}
		}
		b, err := os.ReadFile(dll)
		if err == nil {
			err = os.WriteFile(filepath.Join(w.prefix, "drive_c/windows/system32/bcryptprimitives.dll"), b, 0o755)
		}
		if err != nil {
			wineErr = err
			return
		}
		winePfx = w
	})
	if wineErr != nil {
		t.Fatal(wineErr)
	}
	return winePfx
}

// stopWine ends the prefix's wineserver at the end of the test run.
func stopWine() {
	if winePfx != nil {
		command(context.Background(), "", winePfx.env(), "wineserver", "-k").Run()
	}
}

// The Windows CLI runs under Wine and exchanges files with a Linux ferry-cli
// over loopback, both ways. Over TCP: quic-go cannot open a UDP socket under
// Wine 8 (WSAIoctl fails), which is Wine's limit, not Windows'; the Windows
// receiver reports that and receives over TCP alone.
func TestWineCLITransfers(t *testing.T) {
	a := dist(t)
	w := newWine(t)
	exe := a.path("ferry-cli-VERSION-windows-amd64.exe")
	out := run(t, "", w.env(), "wine", exe, "--version")
	if want := fmt.Sprintf("ferry-cli %s (commit %s, %s, go", a.version, a.commit, a.date); !strings.HasPrefix(out, want) || !strings.Contains(out, "windows/amd64") {
		t.Errorf("ferry-cli.exe --version = %q, want %q... windows/amd64", out, want)
	}
	linux := sourceCLI(t)

	t.Run("windows to linux", func(t *testing.T) {
		in := t.TempDir()
		r, why := startReceiver(t, nil, linux, "receive", "--config", t.TempDir(), "--dir", in,
			"--listen", "127.0.0.1:0", "--no-discovery", "--localsend=false", "--once", "--accept", "all")
		if r == nil {
			t.Fatalf("linux receiver did not start: %s", why)
		}
		file := payload(t, "from windows.bin", 5<<20)
		run(t, "", w.env(), "wine", exe, "send", "--config", winPath(t.TempDir()), "--transport", "tcp",
			"--to", r.tcp, winPath(file))
		r.wait(t)
		sameFile(t, file, filepath.Join(in, "from windows.bin"))
	})

	t.Run("linux to windows", func(t *testing.T) {
		in := t.TempDir()
		r, why := startReceiver(t, w.env(), "wine", exe, "receive", "--config", winPath(t.TempDir()), "--dir", winPath(in),
			"--listen", "127.0.0.1:0", "--no-discovery", "--localsend=false", "--once", "--accept", "all")
		if r == nil {
			// QUIC cannot listen under Wine; the receiver must carry on over TCP.
			t.Fatalf("windows receiver did not start: %s", why)
		}
		if r.tcp == "" {
			t.Fatalf("windows receiver listens without TCP: quic=%q", r.quic)
		}
		file := payload(t, "from linux.bin", 5<<20)
		// Names only Windows refuses (a Mac's "Meeting: notes", a source
		// tree's aux.c, a final dot) arrive under names it takes, and so
		// does an empty folder.
		mac := filepath.Join(t.TempDir(), "Meeting: notes")
		for name, body := range map[string]string{"what?.txt": "a", "aux.c": "b", "sub./end. ": "c"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(mac, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mac, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(mac, "empty?"), 0o755); err != nil {
			t.Fatal(err)
		}
		out := run(t, "", nil, linux, "send", "--config", t.TempDir(), "--transport", "tcp", "--to", r.tcp, file, mac)
		r.wait(t)
		sameFile(t, file, filepath.Join(in, "from linux.bin"))
		for name, body := range map[string]string{"what_.txt": "a", "aux_.c": "b", "sub/end": "c"} {
			if got, err := os.ReadFile(filepath.Join(in, "Meeting_ notes", name)); err != nil || string(got) != body {
				t.Errorf("%s: %q, %v\n%s", name, got, err, out)
			}
		}
		if !strings.Contains(out, "ok      Meeting: notes/what?.txt (saved as Meeting_ notes/what_.txt)") {
			t.Errorf("the sender was not told the name it was saved under:\n%s", out)
		}
		if fi, err := os.Stat(filepath.Join(in, "Meeting_ notes", "empty_")); err != nil || !fi.IsDir() {
			t.Errorf("the empty folder did not arrive: %v", err)
		}
		// Finalising is a rename, not a link and a removal (Wine cannot
		// remove through os.Root): no "from linux.bin.partial" is left as a
		// second name of the file.
		if left := filesUnder(t, in); len(left) != 4 {
			t.Errorf("the Windows receiver left %v, want only the 4 received files", left)
		}
		if fi, err := os.Stat(filepath.Join(in, "from linux.bin")); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
				t.Errorf("the received file has %d names, want 1", st.Nlink)
			}
		}
	})
}

// The installer installs for the current user only (no elevation), with a
// Start menu entry, the optional login item and an uninstall entry, and its
// uninstaller takes all of it away again. Under Wine: see the README for what
// Wine cannot show (the UAC prompt, the firewall rule, Explorer's views).
func TestWindowsInstaller(t *testing.T) {
	a := dist(t)
	w := newWine(t)
	setup := a.path("Ferry-VERSION-windows-amd64-setup.exe")
	target := filepath.Join(t.TempDir(), "Programs", "Ferry")
	// A PATH of the user's own, which the installer must extend and the
	// uninstaller give back unchanged.
	const userPath = `C:\Users\me\bin`
	run(t, "", w.env(), "wine", "reg", "add", `HKCU\Environment`, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", userPath, "/f")
	t.Cleanup(func() { runFiles(t, "", w.env(), "wine", "reg", "delete", `HKCU\Environment`, "/v", "Path", "/f") })
	// /S: silent; /AUTOSTART ticks "Start Ferry when I log in"; /D= must come last.
	run(t, "", w.env(), "wine", setup, "/S", "/AUTOSTART", "/D="+winPath(target))

	for _, f := range []string{"ferry.exe", "ferry-cli.exe", "uninstall.exe", "LICENSE.txt", "THIRD_PARTY_LICENSES.txt"} {
		if _, err := os.Stat(filepath.Join(target, f)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	sameText(t, filepath.Join(target, "LICENSE.txt"), licenseText(t))
	if third, err := os.ReadFile(filepath.Join(target, "THIRD_PARTY_LICENSES.txt")); err == nil {
		checkThirdParty(t, string(third), filepath.Join(target, "ferry.exe"), filepath.Join(target, "ferry-cli.exe"))
	}
	// userEnvPath reads the user's PATH from the registry, with what reg
	// said when it is not there. A query that fails is asked again (once,
	// in CI, wine's reg answered nothing for a value that was there): a
	// value really gone fails every time.
	userEnvPath := func() (string, string) {
		var said string
		for range 3 {
			out, stderr, err := runFiles(t, "", w.env(), "wine", "reg", "query", `HKCU\Environment`, "/v", "Path")
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) >= 3 && f[0] == "Path" {
					return strings.TrimSpace(strings.SplitN(l, f[1], 2)[1]), ""
				}
			}
			said = fmt.Sprintf("reg query: %v, stdout %q, stderr %q", err, out, stderr)
			time.Sleep(time.Second)
		}
		return "", said
	}
	if got, said := userEnvPath(); got != userPath+";"+winPath(target) {
		t.Errorf("the user's PATH after installing is %q, want %q (%s)", got, userPath+";"+winPath(target), said)
	}
	// A new process finds ferry-cli by name (Wine builds the environment
	// from the registry at start, as Windows does for a new terminal).
	if out, stderr, err := runFiles(t, "", w.env(), "wine", "cmd", "/c", "ferry-cli --version"); err != nil || !strings.Contains(out, a.version) {
		t.Errorf("ferry-cli by name after installing: %v, %q %q", err, out, stderr)
	}
	appData := strings.TrimSpace(run(t, "", w.env(), "wine", "cmd", "/c", "echo %APPDATA%"))
	roaming := strings.TrimSpace(run(t, "", w.env(), "winepath", "-u", appData))
	if _, err := os.Stat(filepath.Join(roaming, "Microsoft/Windows/Start Menu/Programs/Ferry.lnk")); err != nil {
		t.Errorf("no Start menu entry: %v", err)
	}
	reg := func(key string) string {
		out, _, _ := runFiles(t, "", w.env(), "wine", "reg", "query", key) // fails once the key is gone
		return out
	}
	const uninstKey = `HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\Ferry`
	const runKey = `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`
	u := reg(uninstKey)
	for _, want := range []string{"DisplayName    REG_SZ    Ferry", "DisplayVersion    REG_SZ    " + a.version,
		`uninstall.exe" /S`, winPath(target)} {
		if !strings.Contains(u, want) {
			t.Errorf("uninstall entry lacks %q:\n%s", want, u)
		}
	}
	if r := reg(runKey); !strings.Contains(r, `ferry.exe" --minimized`) {
		t.Errorf("no login item in the Run key:\n%s", r)
	}
	// What is installed runs (the CLI is in every build of the installer).
	if out := run(t, "", w.env(), "wine", filepath.Join(target, "ferry-cli.exe"), "--version"); !strings.Contains(out, a.version) {
		t.Errorf("installed ferry-cli.exe --version = %q", out)
	}
	// An upgrade while Ferry runs (it sits in the tray): the installer closes
	// it and replaces its files. Windows refuses to overwrite a running
	// program, and the installer used to skip it and report a success, the
	// old program left under the new version's entry.
	cli := filepath.Join(target, "ferry-cli.exe")
	olderBuild(t, cli)
	running, why := startReceiver(t, w.env(), "wine", cli, "receive", "--config", winPath(t.TempDir()), "--dir", winPath(t.TempDir()),
		"--listen", "127.0.0.1:0", "--no-discovery", "--localsend=false")
	if running == nil {
		t.Fatalf("the installed ferry-cli.exe did not start: %s", why)
	}
	run(t, "", w.env(), "wine", setup, "/S", "/D="+winPath(target))
	if sha256File(t, cli) != sha256File(t, a.path("ferry-cli-VERSION-windows-amd64.exe")) {
		t.Error("installing over a running ferry-cli.exe left the old one")
	}
	select {
	case <-running.exited:
	case <-time.After(30 * time.Second):
		t.Error("installing over a running ferry-cli.exe did not close it")
	}

	if realApps {
		t.Run("installed app draws its window", func(t *testing.T) {
			installedAppDrawsWindow(t, w, filepath.Join(target, "ferry.exe"))
		})
	}

	// Ferry running while it is uninstalled: closed, and its files go too.
	if running, why = startReceiver(t, w.env(), "wine", cli, "receive", "--config", winPath(t.TempDir()), "--dir", winPath(t.TempDir()),
		"--listen", "127.0.0.1:0", "--no-discovery", "--localsend=false"); running == nil {
		t.Fatalf("the installed ferry-cli.exe did not start: %s", why)
	}
	// _?= runs the uninstaller in place and waits for it (NSIS otherwise
	// copies it to %TEMP% and returns at once); it leaves only itself.
	run(t, "", w.env(), "wine", filepath.Join(target, "uninstall.exe"), "/S", "_?="+winPath(target))
	for _, f := range []string{"ferry.exe", "ferry-cli.exe"} {
		if _, err := os.Stat(filepath.Join(target, f)); err == nil {
			t.Errorf("%s is still there after uninstalling", f)
		}
	}
	if _, err := os.Stat(filepath.Join(roaming, "Microsoft/Windows/Start Menu/Programs/Ferry.lnk")); err == nil {
		t.Error("the Start menu entry is still there after uninstalling")
	}
	if u := reg(uninstKey); strings.Contains(u, "DisplayName") {
		t.Errorf("the uninstall entry is still there:\n%s", u)
	}
	if r := reg(runKey); strings.Contains(r, "ferry.exe") {
		t.Errorf("the login item is still there:\n%s", r)
	}
	if got, said := userEnvPath(); got != userPath {
		t.Errorf("the user's PATH after uninstalling is %q, want %q as before (%s)", got, userPath, said)
	}
	if out, _, err := runFiles(t, "", w.env(), "wine", "cmd", "/c", "ferry-cli --version"); err == nil && strings.Contains(out, a.version) {
		t.Errorf("ferry-cli is still found by name after uninstalling: %q", out)
	}
}

// olderBuild makes an installed program another build of itself (one byte
// more at its end, which Windows ignores), so that a new install that does
// not replace it shows.
func olderBuild(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The portable zip holds the app, ferry-cli and the licences in one
// versioned folder, stamped with the commit's time, and what it holds runs.
func TestWindowsPortableZip(t *testing.T) {
	a := dist(t)
	zr, err := zip.OpenReader(a.path("Ferry-VERSION-windows-amd64-portable.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	commit, err := time.Parse(time.RFC3339, a.date)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(commit) {
			t.Errorf("%s is dated %v, want the commit's %v", f.Name, f.Modified, commit)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folder := "Ferry-" + a.version + "/"
	want := []string{folder + "ferry.exe", folder + "ferry-cli.exe", folder + "LICENSE.txt", folder + "THIRD_PARTY_LICENSES.txt"}
	if !slices.Equal(names, want) {
		t.Fatalf("zip entries %q, want %q", names, want)
	}
	sameFile(t, a.path("ferry-cli-VERSION-windows-amd64.exe"), filepath.Join(dir, "ferry-cli.exe"))
	sameFile(t, a.path("Ferry-VERSION-windows-amd64.exe"), filepath.Join(dir, "ferry.exe"))
	sameText(t, filepath.Join(dir, "LICENSE.txt"), licenseText(t))
	third, err := os.ReadFile(filepath.Join(dir, "THIRD_PARTY_LICENSES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	checkThirdParty(t, string(third), filepath.Join(dir, "ferry.exe"), filepath.Join(dir, "ferry-cli.exe"))
	w := newWine(t)
	if out := run(t, "", w.env(), "wine", filepath.Join(dir, "ferry-cli.exe"), "--version"); !strings.Contains(out, a.version) {
		t.Errorf("the zip's ferry-cli.exe --version = %q", out)
	}
}

// installedAppDrawsWindow runs the installed Windows app under Wine on an
// Xvfb display: Wine hands its OpenGL to Mesa, so the real window draws. (It
// cannot receive there: QUIC cannot listen under Wine, see the README.)
func installedAppDrawsWindow(t *testing.T, w *wine, exe string) {
	needTools(t, "Xvfb", "xdotool", "import")
	display := startXvfb(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{
		"device_name": "Wine Test", "download_dir": winPath(filepath.Join(dir, "in")), "policy": "everyone",
	})
	if err := os.WriteFile(filepath.Join(cfg, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(w.env(), "DISPLAY="+display)
	w.freshSession(t)
	appDrawsWindow(t, dir, env, "Ferry — Wine Test", "wine-app-window.png", nil, "wine", exe, "--config", winPath(cfg))
}

// freshSession ends the prefix's wineserver and starts another, so that
// the next program starts a new Wine desktop: one started without a display
// (the installer's hidden taskkill starts one) cannot show a window later
// ("Failed to create helper window"), which is Wine's way, not Windows'.
func (w *wine) freshSession(t *testing.T) {
	t.Helper()
	for _, argv := range [][]string{{"wineserver", "-k"}, {"wineserver", "-w"}, {"wineserver", "-p120"}} {
		runFiles(t, "", w.env(), argv[0], argv[1:]...) // -k fails when no server runs
	}
}
