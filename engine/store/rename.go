package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// renameNoReplace gives the file at oldname (OS form, relative to the
// destination) the name newname in one step, failing with an error matching
// fs.ErrExist if newname is taken by anything, even a dangling symlink.
// Unlike link-then-remove it never leaves the file with a second name, not
// even when the removal would fail (Wine lacks the call os.Root removes
// with). It fails with an error matching errors.ErrUnsupported where the
// platform or the file system offers no such rename; Finalize then links.
//
// Per platform (see the renameat_*.go files): Linux renameat2
// RENAME_NOREPLACE (ext4, xfs, btrfs, tmpfs, ...; vfat and some FUSE and
// network file systems refuse the flag), macOS renameatx_np RENAME_EXCL
// (APFS, HFS+), Windows NtSetInformationFile(FileRenameInformation) with
// ReplaceIfExists false (what MoveFileEx without MOVEFILE_REPLACE_EXISTING
// does, but relative to directory handles opened through the Root). The
// other Unix systems have no portable call and use the link. The folders
// come from the folder cache unchecked: the caller has just checked them.
func (d *Dest) renameNoReplace(oldname, newname string) error {
	from, err := d.hold(filepath.Dir(oldname))
	if err != nil {
		return err
	}
	defer d.release(from)
	to, err := d.hold(filepath.Dir(newname))
	if err != nil {
		return err
	}
	defer d.release(to)
	if err := renameat(from.dir, filepath.Base(oldname), to.dir, filepath.Base(newname)); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// errNoAtomicRename is what renameat returns where no rename can refuse to
// replace its target.
var errNoAtomicRename = fmt.Errorf("rename without replacing: %w", errors.ErrUnsupported)
