package engine

import (
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

func TestBatchChunkSize(t *testing.T) {
	files := func(sizes ...int64) []localFile {
		var fs []localFile
		for _, s := range sizes {
			fs = append(fs, localFile{FileEntry: wire.FileEntry{Size: s}})
		}
		return fs
	}
	for _, c := range []struct {
		name  string
		files []localFile
		limit int
		want  int
	}{
		{"a big batch keeps the limit", files(1 << 30), 1 << 20, 1 << 20},
		{"64 MiB is not small", files(32<<20, 32<<20), 1 << 20, 1 << 20},
		{"just under 64 MiB", files(64<<20 - 1), 1 << 20, 128 << 10},
		{"36 MiB in 256 chunks or more", files(36 << 20), 1 << 20, 128 << 10},
		{"20 MiB", files(20 << 20), 1 << 20, 64 << 10},
		{"6 MiB", files(6 << 20), 1 << 20, 64 << 10},
		{"never under 64 KiB", files(1000), 1 << 20, 64 << 10},
		{"an empty batch", nil, 1 << 20, 64 << 10},
		{"a limit under the floor stays", files(1000), 4096, 4096},
		{"a 4 MiB limit", files(100 << 20), 4 << 20, 4 << 20},
		{"a 4 MiB limit, a small batch", files(60 << 20), 4 << 20, 128 << 10},
		{"halving keeps alignment", files(1000), 1<<20 + 4096, 1<<20 + 4096},
		{"halving keeps alignment partway", files(1000), 3 << 20, 96 << 10},
	} {
		if got := batchChunkSize(c.files, c.limit); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
