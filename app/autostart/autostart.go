// Package autostart starts Ferry when the user logs in: an XDG autostart
// .desktop file on Linux and the BSDs, a LaunchAgent on macOS and a Run
// registry value on Windows. Each platform lives in its own file.
package autostart

import (
	"os"
	"path/filepath"

	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// Entry describes what to start at login.
type Entry struct {
	// Exe is the absolute path of the Ferry binary; empty means os.Executable.
	Exe string
	// Args are passed to it (e.g. "--minimized", "--config", dir).
	Args []string
}

func (e Entry) exe() (string, error) {
	if e.Exe != "" {
		return e.Exe, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p, nil
}

// writeFileAtomic writes data to path through a temporary file: temp ->
// fsync -> rename, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, perm)
}
