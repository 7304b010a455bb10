//go:build unix

package resume

import (
	"errors"
	"os"
	"syscall"
)

// lockingJournals: journals are locked here (Busy sees other processes).
const lockingJournals = true

// lockJournal marks f, an open journal, as written by a receiver now: an
// advisory lock that every other open of the file sees (Busy), in this
// process or another one, and that goes with the descriptor when it closes
// (or the process ends). Best effort: a file system without locks has
// none.
func lockJournal(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// journalLocked reports whether a receiver holds the journal at path
// (lockJournal).
func journalLocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return false
}
