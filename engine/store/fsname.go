package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A destination's file system may refuse names that are valid on this
// system: vfat, exFAT and NTFS mounted with windows_names refuse what
// Windows refuses (`<>:"|?*`, a final dot or space, its device names), on
// Linux as on a Mac. Each says so in its own way: EINVAL (the kernel's
// vfat and exFAT), EILSEQ, ENOENT (exfat-fuse) or EPERM (fusefat). So that
// a file named on a Mac ("Meeting: notes.md") arrives on a USB stick as it
// does on Windows, a name such a file system refuses is tried again once
// under the name Windows would take (LocalName's Windows rules:
// "Meeting_ notes.md"), reported as "saved as"; nothing else is made of
// those errors (a folder gone meanwhile fails the retry too, with the
// first error).

// windowsName is the name the element name (no slash) is tried under when
// the file system refused it (err), and whether there is one: a name that
// Windows takes as it is has none, nor has an error that is no refusal.
func windowsName(name string, err error) (string, bool) {
	if err == nil || errors.Is(err, fs.ErrExist) || !nameRefusedErr(err) {
		return "", false
	}
	if alt := localName(name, true); alt != name {
		return alt, true
	}
	return "", false
}

// nameRefusedErr reports whether err is how some file system refuses a
// name it cannot store (see above).
func nameRefusedErr(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EILSEQ) ||
		errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EPERM)
}

// refusedByFS is what a test's stand-in file system (Dest.fsRefuses) says
// of name, as an error of op; nil without one.
func (d *Dest) refusedByFS(op, name string) error {
	if d.fsRefuses == nil {
		return nil
	}
	if err := d.fsRefuses(name); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// create is fo.create(name), unless the stand-in file system refuses name.
func (d *Dest) create(fo *folder, name string) (*os.File, error) {
	if err := d.refusedByFS("create", name); err != nil {
		return nil, err
	}
	return fo.create(name)
}

// mkdir is fo.mkdir(name), unless the stand-in file system refuses name.
func (d *Dest) mkdir(fo *folder, name string) error {
	if err := d.refusedByFS("mkdirat", name); err != nil {
		return err
	}
	return fo.mkdir(name)
}

// placeNew is place(oldname, newname), unless the stand-in file system
// refuses newname's last element.
func (d *Dest) placeNew(oldname, newname string) (linked bool, err error) {
	if err := d.refusedByFS("rename", filepath.Base(newname)); err != nil {
		return false, err
	}
	return d.place(oldname, newname)
}

// A file saved decomposed (NFD) before names were saved composed (by an
// older Ferry, or copied from a Mac disk) looks the same as the composed
// name a peer's file is now saved under ("café.txt" twice in one folder):
// where names are composed, a name whose decomposed spelling is taken in
// its folder counts as taken too, and a folder of that spelling is the
// folder of the name.

// decomposedTwin is the decomposed spelling (NFD) of name, a name as
// LocalName gives it, when names are composed here and it differs from
// name; "" otherwise (every ASCII name).
func decomposedTwin(name string) string {
	if !composeHere {
		return ""
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			if alt := norm.NFD.String(name); alt != name {
				return alt
			}
			return ""
		}
	}
	return ""
}

// twinTaken reports whether folder fo holds name's decomposed twin.
func twinTaken(fo *folder, name string) bool {
	alt := decomposedTwin(name)
	if alt == "" {
		return false
	}
	_, err := fo.isDir(alt)
	return err == nil
}
