//go:build !linux && !darwin && !windows

package fileio

import "os"

// punchHole is nil here: no call for holes, zeros are written.
var punchHole func(f *os.File, off, n int64) error
