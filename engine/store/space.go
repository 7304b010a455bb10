package store

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNoSpace means the destination does not have room for an offer. Errors
// returned by CheckSpace for that reason are *SpaceError and match it.
var ErrNoSpace = errors.New("not enough space")

// SpaceError says an offer does not fit on the destination. Its message is
// a sentence meant for the user.
type SpaceError struct {
	Dir  string // the destination folder that was checked
	Need int64  // bytes the offer needs
	Free int64  // bytes free on Dir's file system
}

// Error returns e.g. "Not enough space on /home: 3.2 GB needed, 1.1 GB free".
func (e *SpaceError) Error() string {
	return fmt.Sprintf("Not enough space on %s: %s needed, %s free", e.Dir, HumanBytes(e.Need), HumanBytes(e.Free))
}

func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// CheckSpace returns a *SpaceError (matching ErrNoSpace) if the file system
// holding dir has fewer than need bytes free, or FreeSpace's error if the
// free space cannot be measured (on unsupported platforms that matches
// errors.ErrUnsupported: the caller decides whether to accept blind).
func CheckSpace(dir string, need int64) error {
	free, err := FreeSpace(dir)
	if err != nil {
		return err
	}
	if need > free {
		return &SpaceError{Dir: dir, Need: need, Free: free}
	}
	return nil
}

// HumanBytes formats n with SI units and one decimal: "999 B", "1.5 kB",
// "3.2 GB".
func HumanBytes(n int64) string {
	if n < 0 {
		// -n overflows for MinInt64; format via uint64.
		return "-" + humanBytes(uint64(-(n+1))+1)
	}
	return humanBytes(uint64(n))
}

func humanBytes(n uint64) string {
	if n < 1000 {
		return strconv.FormatUint(n, 10) + " B"
	}
	const units = "kMGTPE"
	v := float64(n) / 1000
	i := 0
	// Move up while the value would round to 1000.0 or more, so 999,999 B
	// reads "1.0 MB", not "1000.0 kB".
	for v >= 999.95 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + string(units[i]) + "B"
}
