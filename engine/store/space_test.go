package store

import (
	"errors"
	"go/build"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFreeSpace(t *testing.T) {
	dir := t.TempDir()
	free, err := FreeSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if free <= 0 {
		t.Errorf("FreeSpace(%q) = %d, want > 0", dir, free)
	}
	// A folder not made yet is measured where it will be made.
	if got, err := FreeSpace(filepath.Join(dir, "does", "not", "exist")); err != nil || got <= 0 {
		t.Errorf("FreeSpace of a folder not made yet = %d, %v; want its parent's", got, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FreeSpace(filepath.Join(file, "sub")); err == nil {
		t.Error("FreeSpace of a folder under a file: no error")
	}
}

func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	if err := CheckSpace(dir, 0); err != nil {
		t.Errorf("CheckSpace(0) = %v", err)
	}
	if err := CheckSpace(dir, 1); err != nil {
		t.Errorf("CheckSpace(1) = %v", err)
	}
	err := CheckSpace(dir, math.MaxInt64)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("CheckSpace(MaxInt64) = %v, want ErrNoSpace", err)
	}
	var se *SpaceError
	if !errors.As(err, &se) || se.Dir != dir || se.Need != math.MaxInt64 || se.Free <= 0 {
		t.Fatalf("CheckSpace(MaxInt64) = %#v", err)
	}
	want := "Not enough space on " + dir + ": 9.2 EB needed, " + HumanBytes(se.Free) + " free"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestSpaceErrorMessage(t *testing.T) {
	err := error(&SpaceError{Dir: "/home", Need: 3_200_000_000, Free: 1_100_000_000})
	if got, want := err.Error(), "Not enough space on /home: 3.2 GB needed, 1.1 GB free"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{999, "999 B"},
		{1000, "1.0 kB"},
		{1024, "1.0 kB"},
		{1500, "1.5 kB"},
		{999_949, "999.9 kB"},
		{999_950, "1.0 MB"},
		{999_999, "1.0 MB"},
		{3_200_000_000, "3.2 GB"},
		{1_100_000_000, "1.1 GB"},
		{2_500_000_000_000, "2.5 TB"},
		{math.MaxInt64, "9.2 EB"},
		{-1500, "-1.5 kB"},
		{math.MinInt64, "-9.2 EB"},
	} {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// The package stays plain Go: no Fyne, and no other part of the engine
// (small leaf helpers under internal/ are fine).
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "fyne.io/") || (strings.HasPrefix(imp, "github.com/ferrydrop/ferry/") && !strings.HasPrefix(imp, "github.com/ferrydrop/ferry/internal/")) {
			t.Errorf("engine/store imports %s", imp)
		}
	}
}

func TestSpaceErrorFigures(t *testing.T) {
	for _, tc := range []struct {
		err  SpaceError
		want string
	}{
		{SpaceError{Need: 3_200_000_000, Free: 1_100_000_000}, "3.2 GB needed, 1.1 GB free"},
		{SpaceError{Need: 4_096_000_000, Free: 2_000_000_000, Data: 1_000_000},
			"4.1 GB needed, 2.0 GB free (1.0 MB of files, in whole blocks of 4 KiB)"},
		{SpaceError{Need: 4_096_000, Free: 2_000_000_000, Entries: 1_000_000, FreeEntries: 400_000},
			"1,000,000 files and folders to make, room for 400,000 more"},
	} {
		if got := tc.err.Figures(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestOnDisk(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{-1, 0}, {0, 0}, {1, 4096}, {4095, 4096}, {4096, 4096}, {4097, 8192},
		{1 << 30, 1 << 30}, {math.MaxInt64 - 4096, math.MaxInt64 - 4095},
		{math.MaxInt64 - 4095, math.MaxInt64}, {math.MaxInt64, math.MaxInt64},
	} {
		if got := OnDisk(tc.size); got != tc.want {
			t.Errorf("OnDisk(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestRoom(t *testing.T) {
	var r Room
	r.File(1)
	r.File(0)
	r.File(5000)
	r.Folders(2)
	if want := (Room{Disk: 4096 + 8192 + 2*4096, Data: 5001, Entries: 5}); r != want {
		t.Errorf("room %+v, want %+v", r, want)
	}
	// A hostile offer's sizes saturate; they never wrap to a room that fits.
	r.File(math.MaxInt64)
	r.File(math.MaxInt64)
	r.Folders(math.MaxInt64)
	if r.Disk != math.MaxInt64 || r.Data != math.MaxInt64 || r.Entries != math.MaxInt64 {
		t.Errorf("room %+v, want every figure at MaxInt64", r)
	}
}

// The folders a file's path makes count too, each once in an offer's
// order (depth first, or sorted by path), with no set of them held: 1,000
// files in 500 folders were counted as 1,000 entries.
func TestRoomFileAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		paths   []string
		folders int64
	}{
		{"no folder", []string{"a.txt", "b.txt"}, 0},
		{"one path", []string{"a/b/c/x"}, 3},
		{"one folder", []string{"a/x", "a/y", "a/z"}, 1},
		{"depth first", []string{"a/b/x", "a/b/c/y", "a/b/d/z", "a/w", "e/f/v", "top.txt"}, 6},
		{"back up a level", []string{"a/b/c/x", "a/y", "a/b2/z"}, 4},
		{"names alike", []string{"ab/x", "a/y", "a/b/z", "a b/w"}, 4},
		{"folders apart count again", []string{"a/x", "b/y", "a/z"}, 3},
	} {
		var r Room
		for _, p := range tc.paths {
			r.FileAt(p, 1)
		}
		n := int64(len(tc.paths))
		if want := (Room{Disk: (n + tc.folders) * Block, Data: n, Entries: n + tc.folders}); r.Disk != want.Disk || r.Data != want.Data || r.Entries != want.Entries {
			t.Errorf("%s: room %+v, want %d folders: %+v", tc.name, r, tc.folders, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_000_000: "1,000,000",
		-12345: "-12,345", math.MaxInt64: "9,223,372,036,854,775,807"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
