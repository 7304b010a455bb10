//go:build !unix

package engine

var platformWalk = walkDirTree

// changeTime is 0: Windows' nearest (FILE_BASIC_INFO.ChangeTime) needs the
// file opened, one more open per file of a tree, and it also moves when a
// backup tool clears the archive bit; os.Stat does not give it. Resume
// there goes by size and mtime alone (docs/hostile.md).
func changeTime(string) int64 { return 0 }
