package packaging

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The desktop entry takes files (Exec with %F) and is offered for any file
// (MimeType application/octet-stream, which every file type is a kind of):
// a file manager's "Open with Ferry" hands them to `ferry FILE...`, as
// README says. desktop-file-validate finds nothing to say.
func TestDesktopEntry(t *testing.T) {
	path := filepath.Join(repoRoot(t), "packaging/linux/io.ferrydrop.ferry.desktop")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			keys[k] = v
		}
	}
	if got, want := keys["Exec"], "ferry %F"; got != want {
		t.Errorf("Exec=%s, want %s (files from the file manager as arguments)", got, want)
	}
	if !strings.Contains(";"+keys["MimeType"], ";application/octet-stream;") {
		t.Errorf("MimeType=%s, want application/octet-stream among them, so that any file can be opened with Ferry", keys["MimeType"])
	}
	needTools(t, "desktop-file-validate")
	if out := run(t, "", nil, "desktop-file-validate", path); strings.TrimSpace(out) != "" {
		t.Errorf("desktop-file-validate: %s", out)
	}
}
