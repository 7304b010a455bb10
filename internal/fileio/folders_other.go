//go:build !linux

package fileio

import "path/filepath"

// Folders opens the small files a sender was given relative to the folders
// they are in on Linux (folders_linux.go); here it is OpenSmall of the
// whole path.
type Folders struct{}

// NewFolders returns an empty set of held folders.
func NewFolders() *Folders { return &Folders{} }

// OpenSmall opens for reading the file rel (slash-separated) in the folder
// top: OpenSmall(filepath.Join(top, rel)) here.
func (d *Folders) OpenSmall(top, rel string) (*Small, error) {
	return OpenSmall(filepath.Join(top, filepath.FromSlash(rel)))
}

// Close closes the folders held: none here.
func (d *Folders) Close() error { return nil }
