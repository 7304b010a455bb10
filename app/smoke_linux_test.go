package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestGUISmoke runs scripts/gui-smoke.sh: the real desktop app, two
// instances under Xvfb with a D-Bus session and dunst, a 50 MB file sent
// from one to the other and accepted with the keyboard, bytes compared.
// It skips when the X tools are missing and fails when the script fails.
// About 15 s with a warm build cache (the script runs `go build`).
func TestGUISmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("GUI smoke test skipped in -short mode")
	}
	var missing []string
	for _, tool := range []string{"Xvfb", "dbus-run-session", "dunst", "xdotool", "import", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Skipf("GUI smoke test needs %v (apt-get install xvfb dbus-x11 dunst xdotool imagemagick python3)", missing)
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "gui-smoke.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Generous: on a cold build cache the script's `go build` compiles the GUI
	// toolkit (cgo) first, which takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	out := t.TempDir()
	cmd.Env = append(os.Environ(), "SMOKE_OUT="+out, "SMOKE_MB=50")
	// The script starts Xvfb, dbus and two app instances: on timeout end
	// the whole process group, not just bash.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/gui-smoke.sh failed: %v\n%s", err, log)
	}
	for _, png := range []string{"a-prompt.png", "a-done.png", "b-done.png", "b-details.png"} {
		if st, err := os.Stat(filepath.Join(out, png)); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s missing: %v", png, err)
		}
	}
	t.Logf("%s", log)
}
