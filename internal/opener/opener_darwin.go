//go:build darwin

package opener

// Open opens path with the app macOS uses for it.
func Open(path string) (*Started, error) { return start("open", path) }

// OpenFolder opens a folder in the Finder.
func OpenFolder(dir string) (*Started, error) { return start("open", dir) }

// Reveal shows path in the Finder, selected.
func Reveal(path string) (*Started, error) { return start("open", "-R", path) }
