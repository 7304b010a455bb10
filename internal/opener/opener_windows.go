//go:build windows

package opener

import "path/filepath"

// Open opens path with the app Windows uses for it.
func Open(path string) (*Started, error) {
	s, err := start("rundll32", "url.dll,FileProtocolHandler", path)
	return quiet(s), err
}

// OpenFolder opens a folder in Explorer.
func OpenFolder(dir string) (*Started, error) {
	s, err := start("explorer", filepath.Clean(dir))
	return quiet(s), err
}

// Reveal opens Explorer on path's folder with path selected.
func Reveal(path string) (*Started, error) {
	s, err := start("explorer", "/select,"+filepath.Clean(path))
	return quiet(s), err
}

// quiet drops the exit status: Explorer exits 1 even when it did its job.
func quiet(s *Started) *Started {
	if s != nil {
		go s.cmd.Wait()
	}
	return nil
}
