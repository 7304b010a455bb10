package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// What the space check lets through fits, and what it refuses does not: on
// a 1 MiB disk, 200 files of one byte take 800 KiB (not 200 bytes) and are
// let through and written; 300 are refused, and writing them fails; on a
// disk that holds 64 entries, 100 empty files are refused, and making them
// fails.
func TestCheckRoomOnASmallDisk(t *testing.T) {
	fill := func(dir string, files int, data []byte) error {
		for i := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	room := func(files int, size int64) Room {
		var r Room
		for range files {
			r.File(size)
		}
		return r
	}
	for _, tc := range []struct {
		name, options string
		files         int
		size          int64
		refused       bool
	}{
		{"200 one-byte files on 1 MiB", "size=1m", 200, 1, false},
		{"300 one-byte files on 1 MiB", "size=1m", 300, 1, true},
		{"50 empty files in 64 entries", "size=1m,nr_inodes=64", 50, 0, false},
		{"100 empty files in 64 entries", "size=1m,nr_inodes=64", 100, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testutil.SmallDisk(t, tc.options)
			err := CheckRoom(dir, room(tc.files, tc.size))
			var se *SpaceError
			if tc.refused != errors.As(err, &se) {
				t.Fatalf("CheckRoom: %v, want refused %v", err, tc.refused)
			}
			if tc.refused && tc.size > 0 && se.Data != int64(tc.files)*tc.size {
				t.Errorf("refused as %q, want the data's bytes named beside the blocks'", err)
			}
			if tc.refused && tc.size == 0 && se.Entries != int64(tc.files) {
				t.Errorf("refused as %q, want the entries named", err)
			}
			if err := fill(dir, tc.files, make([]byte, tc.size)); (err != nil) != tc.refused {
				t.Errorf("writing the files: %v; the check said refused %v", err, tc.refused)
			}
		})
	}
}
