//go:build !unix

package store

import "io/fs"

// linkCount: os.Stat reports no link count here (Windows' FileInfo lacks
// it), so every file counts as singly linked. Partials are still created
// exclusively (O_EXCL), which is what keeps planted links out.
func linkCount(fi fs.FileInfo) uint64 { return 1 }
