package ui

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/storage/repository"

	"github.com/ferrydrop/ferry/internal/filekind"
)

// Fyne's file dialog (the fallback where no desktop portal runs) opens
// files: each listed file whose extension names no type, to guess one
// from its first line (for its icon), and the picked file, to hand it
// over. Opening a named pipe blocks until something writes to it, and
// both happen on the Fyne goroutine: the whole window froze for good on
// a folder holding a FIFO. guardFiles wraps Fyne's "file" repository so
// that nothing of Fyne opens a file that is not a regular one; a pick of
// one then says what it is (specialFileError).

// specialFileError is a file that is not a regular file: a named pipe, a
// socket, a device. Its Error is a sentence for the user.
type specialFileError struct {
	path string
	mode fs.FileMode
}

func (e *specialFileError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file or folder, so Ferry cannot send it.", EscapeName(filepath.Base(e.path)), filekind.Special(e.mode))
}

// special reports whether m is a file that opening or reading may block
// on or never end: anything but a regular file or a folder (a symbolic
// link is followed first).
func special(m fs.FileMode) bool { return !m.IsRegular() && !m.IsDir() }

// guardFiles puts guardedFiles in front of the "file" repository Fyne
// registered, once.
func guardFiles() {
	r, err := repository.ForURI(storage.NewFileURI("/"))
	if err != nil {
		return // no file repository: nothing opens files
	}
	if _, done := r.(*guardedFiles); done {
		return
	}
	repository.Register("file", &guardedFiles{inner: r})
}

// guardedFiles is Fyne's file repository, but for reading a file that is
// not a regular one: Reader refuses it without opening it, and CanRead
// says no. Everything else is the inner repository's.
type guardedFiles struct {
	inner repository.Repository
}

var (
	_ repository.Repository             = (*guardedFiles)(nil)
	_ repository.WritableRepository     = (*guardedFiles)(nil)
	_ repository.AppendableRepository   = (*guardedFiles)(nil)
	_ repository.DeleteAllRepository    = (*guardedFiles)(nil)
	_ repository.HierarchicalRepository = (*guardedFiles)(nil)
	_ repository.ListableRepository     = (*guardedFiles)(nil)
	_ repository.MovableRepository      = (*guardedFiles)(nil)
	_ repository.CopyableRepository     = (*guardedFiles)(nil)
)

// refuse is the error for reading u: a specialFileError, or nil.
func refuse(u fyne.URI) error {
	st, err := os.Stat(u.Path())
	if err != nil || !special(st.Mode()) {
		return nil // the inner repository says what is wrong, if anything
	}
	return &specialFileError{path: u.Path(), mode: st.Mode()}
}

func (g *guardedFiles) Exists(u fyne.URI) (bool, error) { return g.inner.Exists(u) }

func (g *guardedFiles) Reader(u fyne.URI) (fyne.URIReadCloser, error) {
	if err := refuse(u); err != nil {
		return nil, err
	}
	return g.inner.Reader(u)
}

func (g *guardedFiles) CanRead(u fyne.URI) (bool, error) {
	if refuse(u) != nil {
		return false, nil
	}
	return g.inner.CanRead(u)
}

func (g *guardedFiles) Destroy(scheme string) { g.inner.Destroy(scheme) }

func (g *guardedFiles) Writer(u fyne.URI) (fyne.URIWriteCloser, error) {
	if w, ok := g.inner.(repository.WritableRepository); ok {
		return w.Writer(u)
	}
	return nil, repository.ErrOperationNotSupported
}

func (g *guardedFiles) CanWrite(u fyne.URI) (bool, error) {
	if w, ok := g.inner.(repository.WritableRepository); ok {
		return w.CanWrite(u)
	}
	return false, repository.ErrOperationNotSupported
}

func (g *guardedFiles) Delete(u fyne.URI) error {
	if w, ok := g.inner.(repository.WritableRepository); ok {
		return w.Delete(u)
	}
	return repository.ErrOperationNotSupported
}

func (g *guardedFiles) Appender(u fyne.URI) (fyne.URIWriteCloser, error) {
	if a, ok := g.inner.(repository.AppendableRepository); ok {
		return a.Appender(u)
	}
	return nil, repository.ErrOperationNotSupported
}

func (g *guardedFiles) DeleteAll(u fyne.URI) error {
	if d, ok := g.inner.(repository.DeleteAllRepository); ok {
		return d.DeleteAll(u)
	}
	return repository.ErrOperationNotSupported
}

func (g *guardedFiles) Parent(u fyne.URI) (fyne.URI, error) {
	if h, ok := g.inner.(repository.HierarchicalRepository); ok {
		return h.Parent(u)
	}
	return repository.GenericParent(u)
}

func (g *guardedFiles) Child(u fyne.URI, component string) (fyne.URI, error) {
	if h, ok := g.inner.(repository.HierarchicalRepository); ok {
		return h.Child(u, component)
	}
	return repository.GenericChild(u, component)
}

func (g *guardedFiles) CanList(u fyne.URI) (bool, error) {
	if l, ok := g.inner.(repository.ListableRepository); ok {
		return l.CanList(u)
	}
	return false, repository.ErrOperationNotSupported
}

func (g *guardedFiles) List(u fyne.URI) ([]fyne.URI, error) {
	if l, ok := g.inner.(repository.ListableRepository); ok {
		return l.List(u)
	}
	return nil, repository.ErrOperationNotSupported
}

func (g *guardedFiles) CreateListable(u fyne.URI) error {
	if l, ok := g.inner.(repository.ListableRepository); ok {
		return l.CreateListable(u)
	}
	return repository.ErrOperationNotSupported
}

func (g *guardedFiles) Copy(src, dst fyne.URI) error {
	if c, ok := g.inner.(repository.CopyableRepository); ok {
		return c.Copy(src, dst)
	}
	return repository.GenericCopy(src, dst)
}

func (g *guardedFiles) Move(src, dst fyne.URI) error {
	if m, ok := g.inner.(repository.MovableRepository); ok {
		return m.Move(src, dst)
	}
	return repository.GenericMove(src, dst)
}
