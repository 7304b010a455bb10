package main

import (
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ferry-cli.1 has every command `ferry-cli help` lists and every flag each
// one takes, so that it cannot go stale; man reads both pages without a
// warning (lintian: manpage-has-errors-from-man).
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "ferry-cli")
	build := exec.Command("go", "build", "-o", cli, "../../cmd/ferry-cli")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ferry-cli: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "man")
	if err := writeManPages(out, cli, "0.1.0", "2026-12-05"); err != nil {
		t.Fatal(err)
	}
	page := func(name string) string {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if zr.Name != "" || !zr.ModTime.IsZero() {
			t.Errorf("%s: gzip header has name %q, time %v (want neither: reproducible)", name, zr.Name, zr.ModTime)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cliPage := page("ferry-cli.1.gz")
	help, err := exec.Command(cli, "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmds := parseCommands(string(help))
	if len(cmds) < 5 {
		t.Fatalf("only %d commands read from ferry-cli help:\n%s", len(cmds), help)
	}
	for _, c := range cmds {
		if !strings.Contains(cliPage, "\n.SS "+roff(c.Name)+"\n") {
			t.Errorf("ferry-cli.1 lacks the command %s", c.Name)
		}
		h, err := exec.Command(cli, "help", c.Name).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(h), "\n") {
			if m := flagLine.FindStringSubmatch(l); m != nil && !strings.Contains(cliPage, `\-\-`+roff(m[1])) {
				t.Errorf("ferry-cli.1 lacks %s's flag --%s", c.Name, m[1])
			}
		}
	}
	for _, want := range []string{".SH NAME\nferry\\-cli \\- ", `.BI "\-\-to " HOST:PORT`} {
		if !strings.Contains(cliPage, want) {
			t.Errorf("ferry-cli.1 lacks %q", want)
		}
	}
	if app := page("ferry.1.gz"); !strings.Contains(app, ".SH NAME\nferry \\- ") || !strings.Contains(app, "FILE") {
		t.Errorf("ferry.1:\n%s", app)
	}
	if _, err := exec.LookPath("man"); err == nil {
		for _, name := range []string{"ferry.1.gz", "ferry-cli.1.gz"} {
			// What lintian runs: warnings go to standard error.
			cmd := exec.Command("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", filepath.Join(out, name))
			cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "MANWIDTH=80")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("man --warnings %s: %v\n%s", name, err, stderr.String())
			}
		}
	}
}
