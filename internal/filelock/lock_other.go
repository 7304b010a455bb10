//go:build !unix && !windows

package filelock

import "os"

// Lock takes no lock where the system offers none to Go (js, wasip1,
// plan9): processes sharing a config folder there can lose each other's
// changes written within the same moment.
func Lock(string) (unlock func(), err error) { return func() {}, nil }

func lockFile(*os.File, bool) (ok bool, err error) { return true, nil }

func openRemovable(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
