//go:build linux || freebsd || openbsd || netbsd

package autostart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Path is the autostart file: $XDG_CONFIG_HOME/autostart/ferry.desktop.
func Path() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("autostart: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "autostart", "ferry.desktop"), nil
}

// Enable writes the autostart entry.
func Enable(e Entry) error {
	p, err := Path()
	if err != nil {
		return err
	}
	exe, err := e.exe()
	if err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	words := []string{execQuote(exe)}
	for _, a := range e.Args {
		words = append(words, execQuote(a))
	}
	body := "[Desktop Entry]\nType=Application\nName=Ferry\nComment=Receive files from nearby devices\n" +
		"Exec=" + strings.Join(words, " ") + "\nIcon=ferry\nTerminal=false\nX-GNOME-Autostart-enabled=true\n"
	if err := writeFileAtomic(p, []byte(body), 0o644); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	return nil
}

// execQuote quotes one argument of a desktop entry's Exec key as the
// Desktop Entry Specification asks: double quotes, with `"`, '`', '$' and
// '\' escaped by a backslash; '%' doubled.
func execQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\><~|&;$*?#()`=") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '`' || r == '$' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
