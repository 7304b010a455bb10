// Package opener opens files and shows them in their folder with the
// desktop's own apps: xdg-open and the FileManager1 D-Bus interface on
// Linux and the BSDs, Explorer on Windows, open(1) on macOS. It needs no
// Fyne and builds everywhere with CGO_ENABLED=0.
package opener

import (
	"errors"
	"os/exec"
)

// ErrNoOpener: no app is set up here to open files or folders.
var ErrNoOpener = errors.New("no app opens files or folders here")

// Started is a program that opens something. Wait reports its failure:
// some openers (xdg-open) start at once and fail later when no app takes
// the file. Wait on a nil Started returns nil (the job was done over D-Bus).
type Started struct{ cmd *exec.Cmd }

// Wait waits for the opener and says whether it failed.
func (s *Started) Wait() error {
	if s == nil || s.cmd == nil {
		return nil
	}
	return s.cmd.Wait()
}

func start(name string, args ...string) (*Started, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, errors.Join(ErrNoOpener, err)
	}
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(ErrNoOpener, err)
	}
	return &Started{cmd: cmd}, nil
}
