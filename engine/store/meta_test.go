package store

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A received file gets the modification time and the executable bit it was
// given (SetMeta), whichever way it was written: a partial with a name, one
// closed before it was finalized (as files in flight beyond the bound are),
// a file without a name (CreateWhole); and without SetMeta the time it
// arrived and no executable bit.
func TestMetaIsKept(t *testing.T) {
	d, dir := openDest(t)
	when := time.Date(2019, 5, 5, 10, 30, 0, 123456789, time.UTC)
	data := []byte("#!/bin/sh\necho hi\n")
	for _, tc := range []struct {
		name   string
		create func(rel string) (*Partial, error)
		close  bool
		meta   Meta
	}{
		{"named", d.CreatePartial, false, Meta{ModTime: when, Executable: true}},
		{"named, closed first", d.CreatePartial, true, Meta{ModTime: when, Executable: true}},
		{"without a name", d.CreateWhole, false, Meta{ModTime: when, Executable: true}},
		{"time only", d.CreateWhole, false, Meta{ModTime: when}},
		// Past 2262, where UnixNano wraps (to 1901, before).
		{"far future", d.CreatePartial, false, Meta{ModTime: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"none", d.CreatePartial, false, Meta{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "far future" && runtime.GOOS == "windows" {
				t.Skip("Windows keeps it as the last time UnixNano holds (2262)")
			}
			rel := tc.name + ".sh"
			p, err := tc.create(rel)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.WriteAt(data, 0); err != nil {
				t.Fatal(err)
			}
			if tc.close {
				p.Close()
			}
			p.SetMeta(tc.meta)
			if _, err := d.Finalize(p, rel, int64(len(data))); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			wantTime := tc.meta.ModTime
			if runtime.GOOS != "linux" {
				wantTime = wantTime.Truncate(time.Microsecond)
			}
			if tc.meta.ModTime.IsZero() {
				if age := time.Since(st.ModTime()); age < 0 || age > time.Hour {
					t.Errorf("modified %v, want about now", st.ModTime())
				}
			} else if !st.ModTime().Equal(wantTime) {
				t.Errorf("modified %v, want %v", st.ModTime(), wantTime)
			}
			if runtime.GOOS == "windows" {
				return
			}
			if exec := st.Mode().Perm()&0o111 != 0; exec != tc.meta.Executable {
				t.Errorf("mode %v, want executable %v", st.Mode(), tc.meta.Executable)
			}
			if st.Mode().Perm()&0o022 != 0 {
				t.Errorf("mode %v: writable by others", st.Mode())
			}
		})
	}
}
