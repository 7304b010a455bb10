//go:build !unix

package fileio

import "errors"

// WriteSmall is for bare descriptors, which only unix systems hand out.
func WriteSmall(fd int, b []byte, off int64) (int, error) { return 0, errors.ErrUnsupported }
