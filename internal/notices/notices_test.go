package notices

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each package's layout is found from the executable's folder.
func TestThirdPartyTexts(t *testing.T) {
	for _, layout := range candidates {
		t.Run(layout, func(t *testing.T) {
			root := t.TempDir()
			exe := filepath.Join(root, "bin", "ferry")
			file := filepath.Join(filepath.Dir(exe), filepath.FromSlash(layout))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte("the texts"), 0o644); err != nil {
				t.Fatal(err)
			}
			p, text, err := ThirdPartyTexts(exe)
			if err != nil || text != "the texts" || filepath.Clean(p) != filepath.Clean(file) {
				t.Errorf("ThirdPartyTexts = %q, %q, %v; want %q", p, text, err, file)
			}
		})
	}
	if _, _, err := ThirdPartyTexts(filepath.Join(t.TempDir(), "ferry")); !errors.Is(err, ErrNoTexts) {
		t.Errorf("without a file: %v, want ErrNoTexts", err)
	}
}

// The test binary's own modules are listed, the runtime first.
func TestModules(t *testing.T) {
	m := Modules()
	if len(m) == 0 || !strings.HasPrefix(m[0].Version, "go") {
		t.Fatalf("Modules() = %v", m)
	}
}
