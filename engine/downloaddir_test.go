package engine

import (
	"os"
	"os/exec"
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

// A download folder this process cannot write in is refused where it is
// chosen, not met file by file once offers are accepted. (chattr +i keeps
// even root out of a folder.)
func TestDownloadFolderThatCannotBeWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Downloads")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make a folder immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	_, err := usableDir(dir)
	if err == nil || err.Error() != "cannot use "+dir+" as the download folder: files cannot be saved in it (operation not permitted)" {
		t.Fatalf("got %v", err)
	}
	e := testEngine(t, Options{})
	if err := e.SetDownloadDir(dir); err == nil || e.DownloadDir() == dir {
		t.Errorf("SetDownloadDir took it: %v", err)
	}
	exec.Command("chattr", "-i", dir).Run()
	if got, err := usableDir(dir); err != nil || got != dir {
		t.Errorf("once writable: %q, %v", got, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the check left %v behind", ents)
	}
}
