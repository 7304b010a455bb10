//go:build unix

package store

import (
	"time"

	"golang.org/x/sys/unix"
)

// setMeta gives the open file fd its Meta: the mode first (which leaves
// the times), then the times.
func setMeta(fd uintptr, m Meta) {
	if m.Executable {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) == nil {
			mode := uint32(st.Mode) & 0o777
			unix.Fchmod(int(fd), mode|(mode&0o444)>>2)
		}
	}
	if !m.ModTime.IsZero() {
		setTimes(int(fd), time.Now(), m.ModTime)
	}
}
