//go:build !linux

package main

import (
	"errors"
	"os"
)

// onTmpfs: only Linux is checked; elsewhere every folder counts as a disk.
func onTmpfs(string) bool { return false }

// dropCache: no portable way to drop a file's cache.
func dropCache(*os.File) error { return errors.ErrUnsupported }
