//go:build !linux

package store

import "os"

// createUnnamed fails: only Linux creates files without a name (O_TMPFILE).
func (fo *folder) createUnnamed() (*os.File, error) { return nil, errNoUnnamed }

func (fo *folder) linkUnnamed(*os.File, string) error { return errNoUnnamed }
