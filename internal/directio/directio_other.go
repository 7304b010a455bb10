//go:build !linux

package directio

import (
	"errors"
	"os"
)

func reopen(*os.File, int) (*os.File, error) { return nil, errors.ErrUnsupported }

func refused(error) bool { return true }
