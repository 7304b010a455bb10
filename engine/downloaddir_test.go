package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

// A download folder that is a file says so once, in words.
func TestDownloadFolderThatIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "notes.txt")
	writeFile(t, f, 10)
	_, err := usableDir(f)
	if err == nil || err.Error() != "cannot use "+f+" as the download folder: it is a file" {
		t.Fatalf("%v", err)
	}
	if _, err := usableDir(filepath.Join(f, "sub")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("a folder under a file: %v", err)
	}
}
