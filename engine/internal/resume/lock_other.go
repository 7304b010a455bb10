//go:build !unix

package resume

import "os"

// lockingJournals: journals are not locked here.
const lockingJournals = false

// lockJournal does nothing here: a receiver in another process is not
// seen (Busy); the engine knows its own receivers.
func lockJournal(*os.File) {}

func journalLocked(string) bool { return false }
