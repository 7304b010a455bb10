//go:build linux || freebsd || openbsd || netbsd

package autostart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnableDisable(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if Enabled() {
		t.Fatal("enabled before Enable")
	}
	if err := Enable(Entry{Exe: "/opt/Ferry App/ferry", Args: []string{"--minimized", "--config", "/home/u/100% ferry"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "autostart", "ferry.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	want := `Exec="/opt/Ferry App/ferry" --minimized --config "/home/u/100%% ferry"`
	if !strings.Contains(string(b), want+"\n") || !strings.HasPrefix(string(b), "[Desktop Entry]\n") {
		t.Fatalf("desktop file:\n%s\nwant line %s", b, want)
	}
	if !Enabled() {
		t.Fatal("not enabled after Enable")
	}
	if err := Disable(); err != nil {
		t.Fatal(err)
	}
	if err := Disable(); err != nil {
		t.Fatalf("second Disable: %v", err)
	}
	if Enabled() {
		t.Fatal("still enabled after Disable")
	}
}

func TestExecQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/usr/bin/ferry", "/usr/bin/ferry"},
		{"a b", `"a b"`},
		{`$HOME`, `"\$HOME"`},
		{`x"y`, `"x\"y"`},
		{"", `""`},
	} {
		if got := execQuote(c.in); got != c.want {
			t.Errorf("execQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
