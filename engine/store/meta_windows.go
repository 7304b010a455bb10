//go:build windows

package store

import "golang.org/x/sys/windows"

// setMeta gives the open file (its handle) its modification time; Windows
// has no executable bit to give.
func setMeta(handle uintptr, m Meta) {
	if !m.ModTime.IsZero() {
		ft := windows.NsecToFiletime(m.ModTime.UnixNano())
		windows.SetFileTime(windows.Handle(handle), nil, nil, &ft)
	}
}
