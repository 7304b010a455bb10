package filekind

import (
	"io/fs"
	"testing"
)

func TestSpecial(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeNamedPipe:                  "a named pipe (FIFO)",
		fs.ModeSocket:                     "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a device",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := Special(m); got != want {
			t.Errorf("Special(%v) = %q, want %q", m, got, want)
		}
	}
}
