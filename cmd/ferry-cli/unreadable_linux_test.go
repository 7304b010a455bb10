package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A user sends a folder in which another user's subfolder and file cannot
// be read: the subfolder is named as not sent before the send, the file as
// not sent during it, everything else arrives, and the send exits 1. The
// whole send failed (the subfolder), or reconnected for two minutes and
// failed (the file). ferry-cli runs as nobody; needs root to arrange that.
func TestSendAsAnotherUserLeavesOutWhatItCannotRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run ferry-cli as another user")
	}
	cli := buildCLI(t)
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	// Everything nobody must reach, in a folder it may enter.
	top, err := os.MkdirTemp("", "ferry-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	src := filepath.Join(top, "src")
	for name, mode := range map[string]os.FileMode{"pub/a.txt": 0o644, "c.txt": 0o644, "locked.txt": 0o600, "private/b.txt": 0o644} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(top, "config")
	for _, step := range []error{os.Chmod(top, 0o755), os.Chmod(filepath.Join(src, "private"), 0o700), os.Mkdir(cfg, 0o700), os.Chown(cfg, 65534, 65534), os.Chmod(cli, 0o755), os.Chmod(filepath.Dir(cli), 0o755)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	for d := filepath.Dir(filepath.Dir(cli)); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the test's temp folders, for nobody to reach the binary
	}
	cmd := exec.Command(cli, "send", "--config", cfg, "--to", r.tcp, "--transport", "tcp", src)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("send: %v, want exit 1\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"not sent: 1 folder that could not be read: " + filepath.Join(src, "private") + " (permission denied)",
		"FAILED  src/locked.txt: Not sent: it could not be read on this device (permission denied).",
		"1 of 3 files could not be sent: it could not be read on this device (permission denied); the others arrived.",
	} {
		if !strings.Contains(out.String()+errOut.String(), want) {
			t.Errorf("the output lacks %q:\n%s%s", want, out.String(), errOut.String())
		}
	}
	if strings.Contains(out.String(), "reconnecting") {
		t.Errorf("the send reconnected:\n%s", out.String())
	}
	r.wait()
	got := r.files(t)
	slices.Sort(got)
	if want := []string{"src/c.txt", "src/pub/a.txt"}; !slices.Equal(got, want) {
		t.Errorf("received %v, want %v", got, want)
	}
}
