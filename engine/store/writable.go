package store

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNotWritable means the download folder cannot be written: its file
// system is mounted read-only, or this user may not write in it. An offer
// is refused whole for it before anyone is asked (core.Inbox.Decide):
// accepted, every file failed once its bytes had crossed.
var ErrNotWritable = errors.New("the download folder cannot be written")

// Writable reports whether files can be made in dir, with one cheap system
// call and no file made (writable: access(2) with W_OK, which says EROFS
// for a read-only mount, even to root, and EACCES for a folder this user
// may not write in). A folder not made yet is not refused here: opening
// the destination makes it or says why not. Where the check cannot be made
// (Windows, other systems) it refuses nothing: each file's write then says
// why.
func Writable(dir string) error {
	err := writable(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%w (%w)", ErrNotWritable, err)
}
