//go:build !linux && !darwin && !windows

package store

import (
	"errors"
	"os"
)

func fileIdentity(*os.File) (string, error) {
	return "", errors.New("file identity unknown on this platform")
}
