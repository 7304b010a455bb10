package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A licence file that a package of ours embeds next to third-party code
// becomes an item of its own, named and placed; other embedded files do not.
func TestEmbeddedLicenses(t *testing.T) {
	dir := t.TempDir()
	mit := "MIT License\n\nCopyright (c) 2013 Example\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the \"Software\"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:\n\nThe above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.\n\nTHE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.\n"
	if err := os.MkdirAll(filepath.Join(dir, "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"assets/lib.min.js": "js", "assets/lib-js.LICENSE": mit, "assets/page.html": "<p>"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]module{}
	if err := embeddedLicenses(mainModule+"/engine/web", dir, []string{"assets/lib.min.js", "assets/lib-js.LICENSE", "assets/page.html"}, out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("got %d items, want 1: %v", len(out), out)
	}
	m, ok := out["lib-js, embedded in "+mainModule+"/engine/web"]
	if !ok || m.Pattern != "engine/web/assets/*" || strings.Join(m.IDs, ",") != "MIT" || len(m.Files) != 1 {
		t.Errorf("item %+v", m)
	}
	if c := debianCopyright([]module{m}); !strings.Contains(c, "\nFiles: engine/web/assets/*\nCopyright: 2013 Example\nLicense: Expat\n") {
		t.Errorf("copyright paragraph:\n%s", c)
	}
}

// A module under the Apache License 2.0 points to Debian's copy of the text
// in its copyright paragraph (lintian: copyright-file-contains-full-apache-2-license
// is an error); THIRD_PARTY_LICENSES keeps the text as the module ships it.
// Its copyright lines and any other file of the module (a NOTICE) stay.
func TestDebianCopyrightApache(t *testing.T) {
	dir, err := goModDir("fyne.io/systray")
	if err != nil {
		t.Skip(err)
	}
	files, err := licenseFiles(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("licence files of fyne.io/systray: %v %v", files, err)
	}
	files = append(files, licenseText{Name: "NOTICE", Text: "Example notice\nThis product includes software developed by Example."})
	m := module{Path: "fyne.io/systray", Version: "v1", IDs: identify(files), Files: files}
	c := debianCopyright([]module{m})
	for _, bad := range []string{"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"} {
		if strings.Contains(c, bad) {
			t.Errorf("the copyright file holds the Apache licence's full text (%q)", bad)
		}
	}
	for _, want := range []string{
		"\nFiles: fyne.io/systray/*\nCopyright: 2014 Brave New Software Project, Inc.\nLicense: Apache-2.0\n",
		"/usr/share/common-licenses/Apache-2.0",
		" This product includes software developed by Example.\n",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the copyright file lacks %q:\n%s", want, c)
		}
	}
}

// A module whose one licence file holds the Apache License 2.0 among
// others (klauspost/compress: BSD for most, Apache 2.0 for gzhttp, MIT
// for a folder of s2) keeps the others' texts in the copyright file, and
// points to Debian's copy for the Apache terms (lintian's error,
// copyright-file-contains-full-apache-2-license, failed the package
// once klauspost/compress was linked).
func TestDebianCopyrightApacheAmongOthers(t *testing.T) {
	dir, err := goModDir("github.com/klauspost/compress")
	if err != nil {
		t.Skip(err)
	}
	files, err := licenseFiles(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("licence files of klauspost/compress: %v %v", files, err)
	}
	if !strings.Contains(files[0].Text, "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION") {
		t.Skip("this version of klauspost/compress does not hold the Apache terms in its licence file")
	}
	m := module{Path: "github.com/klauspost/compress", Version: "v1", IDs: identify(files), Files: files}
	c := debianCopyright([]module{m})
	if strings.Contains(c, "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION") {
		t.Error("the copyright file holds the Apache licence's full text")
	}
	for _, want := range []string{
		" Redistribution and use in source and binary forms", // the BSD text
		" Files: gzhttp/*",
		"/usr/share/common-licenses/Apache-2.0",
		" Copyright 2016-2017 The New York Times Company", // the Apache appendix's notice
		" The MIT License (MIT)",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the copyright file lacks %q", want)
		}
	}
}

// goModDir is a module's folder in the module cache.
func goModDir(path string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// The copyright file has a paragraph for the Go standard library and
// runtime, which every binary links (THIRD_PARTY_LICENSES always had it).
func TestDebianCopyrightGo(t *testing.T) {
	dir := t.TempDir()
	out, copyright := filepath.Join(dir, "THIRD_PARTY_LICENSES"), filepath.Join(dir, "copyright")
	if err := writeLicenses(out, copyright, []string{mainModule + "/internal/version"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(copyright)
	if err != nil {
		t.Fatal(err)
	}
	c := string(b)
	for _, want := range []string{
		"\nFiles: go/*\nCopyright: 2009 The Go Authors.\nLicense: BSD-3-clause",
		" Redistribution and use in source and binary forms",
		"\nComment: The Go standard library and runtime (go1.",
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the copyright file lacks %q:\n%s", want, c)
		}
	}
}
