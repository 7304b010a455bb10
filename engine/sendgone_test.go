package engine

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// A file gone when its turn comes is an error and no source, small (opened
// without an os.File) or large: the worker closes a source that is not nil.
func TestOpenToSendFileGone(t *testing.T) {
	parent := t.TempDir()
	for _, size := range []int64{100, 2 << 20} {
		lf := localFile{FileEntry: wire.FileEntry{Path: "gone.bin", Size: size}, parent: &parent}
		s, err := openToSend(&lf, fileio.Auto)
		if !errors.Is(err, fs.ErrNotExist) || s != nil {
			t.Errorf("%d bytes, gone: source %#v, error %v", size, s, err)
		}
	}
}
