package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Survey says what a send of some paths would offer, as the send's own
// walk finds it: files, bytes, empty folders and what is left out.
func TestSurveySaysWhatASendOffers(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "T")
	writeFile(t, filepath.Join(dir, "a.txt"), 10)
	writeFile(t, filepath.Join(dir, "sub", "b.bin"), 3000)
	writeFile(t, filepath.Join(dir, "sub", "deeper", "c"), 0)
	if err := os.MkdirAll(filepath.Join(dir, "empty", "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(root, "loose.jpg")
	writeFile(t, loose, 7)

	c, err := Survey(context.Background(), []string{dir, loose})
	if err != nil {
		t.Fatal(err)
	}
	if c.Files != 4 || c.Bytes != 3017 || c.EmptyFolders != 1 || c.Skipped.Symlinks != 1 || c.Skipped.Count() != 1 {
		t.Errorf("got %+v; want 4 files, 3017 bytes, 1 empty folder, 1 symbolic link left out", c)
	}
	m, _, err := buildManifestSkipping([]string{dir, loose})
	if err != nil || len(m.files) != c.Files || len(m.folders) != c.EmptyFolders {
		t.Errorf("the send's own walk: %d files, %d folders, %v", len(m.files), len(m.folders), err)
	}

	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"only empty folders", []string{filepath.Join(dir, "empty")}, "they hold only 1 empty folder"},
		{"missing", []string{filepath.Join(root, "gone")}, "cannot read " + filepath.Join(root, "gone")},
		{"nothing", nil, ErrNothingToSend.Error()},
	} {
		if _, err := Survey(context.Background(), tc.paths); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A survey stops when its context ends, within a folder's walk too (the
// send sheet closed or given other files while it counted a large tree).
func TestSurveyStopsWithItsContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "many")
	for i := range 2 * surveyCheck {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%d", i)), 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Survey(ctx, []string{dir}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
	// Ended after the walk began: its first look, at the start, finds it
	// going on; the next, within the folder, finds it ended.
	late := &endsAfter{Context: context.Background(), looks: 1}
	if _, err := Survey(late, []string{dir}); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "cannot read") {
		t.Errorf("ended during the walk: %v", err)
	}
	if late.calls != 2 {
		t.Errorf("it looked at its context %d times, want 2 (at the start, after %d entries)", late.calls, surveyCheck)
	}
	if c, err := Survey(context.Background(), []string{dir}); err != nil || c.Files != 2*surveyCheck {
		t.Errorf("not ended: %+v, %v", c, err)
	}
}

// endsAfter is a context whose Err says it goes on for its first looks,
// then that it was cancelled.
type endsAfter struct {
	context.Context
	looks, calls int
}

func (c *endsAfter) Err() error {
	if c.calls++; c.calls > c.looks {
		return context.Canceled
	}
	return nil
}
