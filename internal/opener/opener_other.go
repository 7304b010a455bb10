//go:build !linux && !freebsd && !openbsd && !netbsd && !windows && !darwin

package opener

// Open: this platform has no opener Ferry knows.
func Open(string) (*Started, error) { return nil, ErrNoOpener }

// OpenFolder: this platform has no opener Ferry knows.
func OpenFolder(string) (*Started, error) { return nil, ErrNoOpener }

// Reveal: this platform has no opener Ferry knows.
func Reveal(string) (*Started, error) { return nil, ErrNoOpener }
