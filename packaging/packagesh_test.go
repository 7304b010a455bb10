package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// package.sh stamps the commit, and -dirty, when it starts; a commit or an
// edit to a tracked file while it builds (the full build takes ~20
// minutes) would end up in binaries stamped as something they are not, so
// it checks again at the end and fails. An edit made before it starts only
// makes the stamp -dirty. Run on a clone with this checkout's package.sh;
// a `go` ahead on PATH edits README.md the first time it runs, which is
// after the stamp.
func TestPackageTreeChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds ferry-cli")
	}
	needTools(t, "git", "go")
	root := repoRoot(t)
	clone := filepath.Join(t.TempDir(), "ferry")
	run(t, "", nil, "git", "clone", "-q", root, clone)
	script, err := os.ReadFile(filepath.Join(root, "scripts/package.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "scripts/package.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, clone, nil, "git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "--allow-empty", "-am", "this checkout's package.sh")

	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	mark := filepath.Join(shim, "edited")
	goShim := "#!/bin/sh\nif [ ! -e '" + mark + "' ]; then : >'" + mark + "'; echo 'edited during the build' >>'" + filepath.Join(clone, "README.md") + "'; fi\nexec '" + realGo + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH"), "CLI_TARGETS=linux/amd64", "DIST=" + t.TempDir()}

	stdout, stderr, err := runFiles(t, clone, env, filepath.Join(clone, "scripts/package.sh"), "cli")
	if err == nil || !strings.Contains(stderr, "the tree changed during the build") {
		t.Errorf("package.sh with README.md edited during the build: %v, want it to fail and say the tree changed\n%s%s", err, stdout, stderr)
	}

	// Edited before the start (the shim's mark is there: no more edits):
	// stamped -dirty, and it succeeds.
	stdout, stderr, err = runFiles(t, clone, env, filepath.Join(clone, "scripts/package.sh"), "cli")
	if err != nil || !strings.Contains(stdout, "-dirty,") {
		t.Errorf("package.sh on a tree edited before it started: %v, want success with a -dirty stamp\n%s%s", err, stdout, stderr)
	}
}
