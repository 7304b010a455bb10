package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	// licensecheck is the classifier pkg.go.dev uses to name a module's
	// licence; it only names licences, the texts are copied as found.
	"github.com/google/licensecheck"
)

// licensePlatforms are the GOOS values Ferry ships for: what is linked
// differs per OS (x/sys/windows, the GLFW and systray back ends), and every
// package carries the union, so that one file is right for all of them.
var licensePlatforms = []string{"linux", "windows", "darwin"}

// licenseFile matches the names a module's licence and notice files have.
var licenseFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|unlicense|patents)([.-].*)?$`)

// module is one linked module and the licence files at its root.
type module struct {
	Path, Version string
	// Pattern is the Debian copyright Files pattern: "<module path>/*",
	// or for an embedded item its folder in this repository.
	Pattern string
	Comment string   // the Debian copyright paragraph's Comment, if any
	IDs     []string // SPDX identifiers licensecheck found, e.g. "MIT"
	Files   []licenseText
}

type licenseText struct {
	Name, Text string
}

// listModule is what `go list -deps -json` says about a package's module.
type listModule struct {
	Path, Version, Dir string
	Main               bool
	Replace            *listModule
}

// mainModule is Ferry's module path, as go list reports it.
const mainModule = "github.com/ferrydrop/ferry"

// embeddedLicense matches the licence file shipped next to third-party
// code that a package of ours embeds (go:embed), e.g.
// "tus-js-client.LICENSE" beside a minified script.
var embeddedLicense = regexp.MustCompile(`(?i)^(.+)[.-](licen[cs]e|copying|notice)(\.txt|\.md)?$`)

// linkedModules lists the modules the packages link on every platform,
// with their licence files, sorted by path, and the third-party files our
// own packages embed that come with a licence file. Every module must have
// one.
func linkedModules(pkgs []string) ([]module, error) {
	seen := map[string]listModule{}
	embedded := map[string]module{}
	for _, goos := range licensePlatforms {
		args := append([]string{"list", "-deps", "-tags", "migrated_fynedo", "-json=ImportPath,Dir,EmbedFiles,Module,Standard"}, pkgs...)
		cmd := exec.Command("go", args...)
		// CGO_ENABLED=1: the app's cgo files (GLFW, systray) count.
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=1")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list (GOOS=%s): %w", goos, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath, Dir string
				EmbedFiles      []string
				Standard        bool
				Module          *listModule
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("go list: %w", err)
			}
			if p.Module != nil && p.Module.Main {
				if err := embeddedLicenses(p.ImportPath, p.Dir, p.EmbedFiles, embedded); err != nil {
					return nil, err
				}
				continue
			}
			if p.Standard || p.Module == nil {
				continue
			}
			m := *p.Module
			if m.Replace != nil {
				m.Dir = m.Replace.Dir
			}
			seen[m.Path] = m
		}
	}
	var mods []module
	var missing []string
	for _, m := range seen {
		files, err := licenseFiles(m.Dir)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			missing = append(missing, m.Path+"@"+m.Version)
			continue
		}
		mods = append(mods, module{Path: m.Path, Version: m.Version, IDs: identify(files), Files: files})
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("no licence file at the root of %s: Ferry may not redistribute them", strings.Join(missing, ", "))
	}
	for _, m := range embedded {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// embeddedLicenses adds to out the licence files among a package's
// embedded files, each as the third-party item it names ("tus-js-client,
// embedded in github.com/ferrydrop/ferry/engine/weblink").
func embeddedLicenses(importPath, dir string, files []string, out map[string]module) error {
	for _, f := range files {
		m := embeddedLicense.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return fmt.Errorf("licenses: %w", err)
		}
		files := []licenseText{{Name: f, Text: strings.TrimSpace(string(b))}}
		name := m[1] + ", embedded in " + importPath
		rel := strings.TrimPrefix(filepath.ToSlash(filepath.Dir(filepath.Join(strings.TrimPrefix(importPath, mainModule+"/"), f))), "./")
		out[name] = module{Path: name, Version: "(embedded)", Pattern: rel + "/*", IDs: identify(files), Files: files}
	}
	return nil
}

// licenseFiles reads the licence and notice files in dir, in name order.
func licenseFiles(dir string) ([]licenseText, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("licenses: %w", err)
	}
	var out []licenseText
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenseFile.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("licenses: %w", err)
		}
		out = append(out, licenseText{Name: e.Name(), Text: strings.TrimSpace(string(b))})
	}
	return out, nil
}

// identify names the licences in files; "unknown" if licensecheck
// recognises none (the text is still shipped).
func identify(files []licenseText) []string {
	var ids []string
	for _, f := range files {
		cov := licensecheck.Scan([]byte(f.Text))
		for _, m := range cov.Match {
			if !slices.Contains(ids, m.ID) {
				ids = append(ids, m.ID)
			}
		}
	}
	if len(ids) == 0 {
		ids = []string{"unknown"}
	}
	slices.Sort(ids)
	return ids
}

// goLicense is the Go distribution's licence: its runtime and standard
// library are in every binary.
func goLicense() (module, error) {
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return module{}, fmt.Errorf("go env: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return module{}, fmt.Errorf("go env GOROOT GOVERSION: %q", out)
	}
	files, err := licenseFiles(f[0])
	if err != nil || len(files) == 0 {
		return module{}, fmt.Errorf("licenses: no LICENSE in GOROOT %s: %v", f[0], err)
	}
	return module{Path: "Go standard library and runtime", Version: f[1], IDs: identify(files), Files: files,
		Pattern: "go/*", Comment: "The Go standard library and runtime (" + f[1] + "), linked into every Go program."}, nil
}

// writeLicenses writes the third-party notices for pkgs as text to out and,
// when copyright is not empty, a machine-readable Debian copyright file
// (https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/) to it.
func writeLicenses(out, copyright string, pkgs []string) error {
	mods, err := linkedModules(pkgs)
	if err != nil {
		return err
	}
	g, err := goLicense()
	if err != nil {
		return err
	}
	mods = append([]module{g}, mods...)

	var b strings.Builder
	b.WriteString("Ferry: third-party software\n\n")
	b.WriteString("Ferry is licensed under the Apache License, Version 2.0 (see LICENSE).\n")
	b.WriteString("Its programs link the software below, each under its own licence, whose\n")
	b.WriteString("full text follows. This file is generated from the modules the build links\n")
	b.WriteString("(go run ./packaging/tool licenses).\n\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "  %-60s %-12s %s\n", m.Path, m.Version, strings.Join(m.IDs, ", "))
	}
	for _, m := range mods {
		fmt.Fprintf(&b, "\n%s\n%s %s (%s)\n", strings.Repeat("=", 78), m.Path, m.Version, strings.Join(m.IDs, ", "))
		for _, f := range m.Files {
			fmt.Fprintf(&b, "\n--- %s\n\n%s\n", f.Name, f.Text)
		}
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("licenses: %w", err)
	}
	if copyright == "" {
		return nil
	}
	if err := os.WriteFile(copyright, []byte(debianCopyright(mods)), 0o644); err != nil {
		return fmt.Errorf("licenses: %w", err)
	}
	return nil
}

// debianNames maps SPDX identifiers to the short names Debian's copyright
// format uses where they differ.
var debianNames = map[string]string{
	"MIT": "Expat", "BSD-2-Clause": "BSD-2-clause", "BSD-3-Clause": "BSD-3-clause",
	"GPL-2.0": "GPL-2", "LGPL-2.1": "LGPL-2.1", "MPL-2.0": "MPL-2.0", "Apache-2.0": "Apache-2.0",
}

// copyrightLine picks a licence text's copyright statements.
var copyrightLine = regexp.MustCompile(`(?mi)^\s*copyright\s+(?:\(c\)|©|\d).*$`)

// debianCopyright is the DEP-5 copyright file: Ferry under Apache-2.0, then
// one paragraph per linked module, the Go distribution's first (its path as
// the Files pattern, the copyright lines of its licence, its licence with
// the full text).
func debianCopyright(mods []module) string {
	var b strings.Builder
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: Ferry\n")
	b.WriteString("Upstream-Contact: https://github.com/ferrydrop/ferry/issues\n")
	b.WriteString("Source: https://github.com/ferrydrop/ferry\n")
	b.WriteString("Comment: The binaries are statically linked Go programs; the Files paragraphs\n")
	b.WriteString(" after the first name what is linked into them: the Go standard library and\n")
	b.WriteString(" runtime (go/*), then each Go module by its module path.\n")
	b.WriteString(" /usr/share/doc/ferry/THIRD_PARTY_LICENSES has every licence text as found.\n\n")
	b.WriteString("Files: *\nCopyright: Ferry developers\nLicense: Apache-2.0\n")
	b.WriteString(" On Debian systems, the full text of the Apache License, Version 2.0 can be\n")
	b.WriteString(" found in /usr/share/common-licenses/Apache-2.0.\n")
	for _, m := range mods {
		names := make([]string, len(m.IDs))
		for i, id := range m.IDs {
			if n, ok := debianNames[id]; ok {
				id = n
			}
			names[i] = id
		}
		var lines []string
		for _, f := range m.Files {
			for _, l := range copyrightLine.FindAllString(f.Text, -1) {
				l = strings.TrimSpace(regexp.MustCompile(`(?i)^copyright\s*(\(c\)|©)?\s*`).ReplaceAllString(strings.TrimSpace(l), ""))
				if l != "" && !slices.Contains(lines, l) {
					lines = append(lines, l)
				}
			}
		}
		if len(lines) == 0 {
			lines = []string{"the authors of " + m.Path}
		}
		pattern := m.Pattern
		if pattern == "" {
			pattern = m.Path + "/*"
		}
		fmt.Fprintf(&b, "\nFiles: %s\nCopyright: %s\n", pattern, strings.Join(lines, "\n "))
		fmt.Fprintf(&b, "License: %s\n", strings.Join(names, " and "))
		for i, f := range m.Files {
			if i > 0 {
				b.WriteString(" .\n")
			}
			text := f.Text
			if isApache2(text) {
				// Debian ships this text; its policy (and lintian, as an
				// error) wants the copyright file to point there instead.
				text = apache2Pointer
			} else {
				// A file of several licences (klauspost/compress: BSD,
				// then Apache 2.0 for one folder, then MIT) keeps the
				// others and points to Debian's copy for that one.
				text = apache2Terms.ReplaceAllLiteralString(text, apache2Pointer)
			}
			for _, l := range strings.Split(text, "\n") {
				if l = strings.TrimRight(l, " \t\r"); l == "" {
					b.WriteString(" .\n")
				} else {
					b.WriteString(" " + l + "\n")
				}
			}
		}
		if m.Comment != "" {
			fmt.Fprintf(&b, "Comment: %s\n", m.Comment)
		}
	}
	return b.String()
}

// apache2Pointer stands in a Debian copyright file for the Apache License
// 2.0's text, which every Debian system has in common-licenses.
const apache2Pointer = `On Debian systems, the full text of the Apache License, Version 2.0 can be
found in /usr/share/common-licenses/Apache-2.0; the module's own copy is in
/usr/share/doc/ferry/THIRD_PARTY_LICENSES.`

// apache2Terms is the Apache License 2.0's terms inside a longer licence
// file: from its title to "END OF TERMS AND CONDITIONS" (its appendix, the
// notice a work carries, stays: it names who holds the copyright).
var apache2Terms = regexp.MustCompile(`(?ms)^[ \t]*Apache License[ \t]*\n[ \t]*Version 2\.0, January 2004\b.*?^[ \t]*END OF TERMS AND CONDITIONS[ \t]*$`)

// isApache2 reports whether a licence file is the Apache License 2.0 and
// nothing else (its appendix filled in or not): licensecheck finds that
// licence alone, covering the whole text.
func isApache2(text string) bool {
	cov := licensecheck.Scan([]byte(text))
	return len(cov.Match) == 1 && cov.Match[0].ID == "Apache-2.0" && cov.Percent >= 99
}
