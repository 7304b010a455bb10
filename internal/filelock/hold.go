package filelock

import "os"

// Hold waits for an exclusive lock on path (created if need be), as Lock
// does, for a lock file its holder may remove as it lets go (a lock of
// its own for each of many keys, which would pile up otherwise): once
// locked, the file must still be the one at path, else a holder removed
// it meanwhile and the new one is locked instead. waiting, when not nil,
// runs once if another holds the lock (tests). unlock lets go; a holder
// that removes the file does so before it calls unlock: the file is
// opened so that it can be removed while held (on Windows too, where a
// file open without FILE_SHARE_DELETE cannot be).
func Hold(path string, waiting func()) (unlock func(), err error) {
	for {
		f, err := openRemovable(path)
		if err != nil {
			return nil, err
		}
		ok, err := lockFile(f, false)
		if err == nil && !ok {
			if waiting != nil {
				waiting()
				waiting = nil
			}
			_, err = lockFile(f, true)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		if same(f, path) {
			return func() { f.Close() }, nil // closing the file drops the lock
		}
		f.Close()
	}
}

// same reports whether f is the file at path still.
func same(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	there, err := os.Stat(path)
	return err == nil && os.SameFile(held, there)
}

// TryLock takes an exclusive lock on path (created if need be) without
// waiting: ok is false while another holds it (another process, or
// another open of the file in this one). The file stays when unlock lets
// go, for a lock of one thing that many processes may ask for again.
func TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if ok, err = lockFile(f, false); err != nil || !ok {
		f.Close()
		return nil, false, err
	}
	return func() { f.Close() }, true, nil // closing the file drops the lock
}
