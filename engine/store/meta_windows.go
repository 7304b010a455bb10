//go:build windows

package store

import (
	"math"
	"time"

	"golang.org/x/sys/windows"
)

// setMeta gives the open file (its handle) its modification time; Windows
// has no executable bit to give.
func setMeta(handle uintptr, m Meta) {
	if !m.ModTime.IsZero() {
		// UnixNano wraps past 2262: such a time is kept as the last one it
		// holds, not as one in 1901.
		t := m.ModTime
		if last := time.Unix(0, math.MaxInt64); t.After(last) {
			t = last
		}
		ft := windows.NsecToFiletime(t.UnixNano())
		windows.SetFileTime(windows.Handle(handle), nil, nil, &ft)
	}
}
