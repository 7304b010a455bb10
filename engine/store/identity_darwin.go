package store

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity: the birth time (APFS, HFS+, FAT and exFAT keep one).
func fileIdentity(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no stat of %s", f.Name())
	}
	return fmt.Sprintf("b%x.%09d", st.Birthtimespec.Sec, st.Birthtimespec.Nsec), nil
}
