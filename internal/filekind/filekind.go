// Package filekind names, in words for the user, what a path is when it is
// neither a regular file nor a folder ("a named pipe (FIFO)"): the engine
// refusing to send one and the app's file dialog refusing to open one say
// it the same way. It is a leaf: the ui may use it.
package filekind

import "io/fs"

// Special names the file type of m, which is not a regular file or a
// folder.
func Special(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
