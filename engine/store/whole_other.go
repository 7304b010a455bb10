//go:build !linux

package store

// createUnnamed fails: only Linux creates files without a name (O_TMPFILE).
func (fo *folder) createUnnamed() (int, error) { return -1, errNoUnnamed }

func (fo *folder) linkUnnamed(int, string) error { return errNoUnnamed }

// unnamedIdentity is never called: no partial is without a name here.
func (p *Partial) unnamedIdentity() (string, error) { return "", errNoUnnamed }

// closeFD is never called: no partial has a bare descriptor here.
func closeFD(int) error { return errNoUnnamed }
