package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the "rpm" packager
	"go.yaml.in/yaml/v3"
)

// writePackage builds the package of format ("deb", "rpm") described by the
// nfpm config at cfgPath into out, with every time stamp set to mtime.
func writePackage(format, cfgPath, out string, mtime time.Time) error {
	cfg, err := nfpm.ParseFile(cfgPath)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", format, cfgPath, err)
	}
	info, err := cfg.Get(format)
	if err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	info.MTime = mtime
	if info.Changelog == "" {
		path, err := writeChangelog(info, mtime)
		if err != nil {
			return fmt.Errorf("%s: %w", format, err)
		}
		defer os.Remove(path)
		info.Changelog = path
	}
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	pkg, err := nfpm.Get(format)
	if err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	var buf bytes.Buffer
	if err := pkg.Package(info, &buf); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	return nil
}

// changelogEntry is one entry of the chglog YAML file nfpm turns into the
// .deb's changelog.Debian.gz and the .rpm's %changelog.
type changelogEntry struct {
	Semver   string    `yaml:"semver"`
	Date     time.Time `yaml:"date"`
	Packager string    `yaml:"packager"`
	Deb      struct {
		Urgency       string   `yaml:"urgency"`
		Distributions []string `yaml:"distributions"`
	} `yaml:"deb"`
	Changes []struct {
		Note string `yaml:"note"`
	} `yaml:"changes"`
}

// writeChangelog writes a temporary changelog with one entry, for this
// version and release, dated mtime: Debian's policy requires a
// changelog.Debian.gz of every package with a revision (lintian's
// no-changelog is an error). What changed is in the release notes it
// points to. The caller removes the file.
func writeChangelog(info *nfpm.Info, mtime time.Time) (string, error) {
	e := changelogEntry{Semver: info.Version, Date: mtime, Packager: info.Maintainer}
	if info.Release != "" {
		e.Semver += "-" + info.Release
	}
	e.Deb.Urgency = "low"
	e.Deb.Distributions = []string{"stable"}
	// One short line (lintian: debian-changelog-line-too-long past 80).
	note := "Ferry " + info.Version
	if info.Homepage != "" {
		note = "Release notes: " + strings.TrimSuffix(info.Homepage, "/") + "/releases/tag/v" + info.Version
	}
	e.Changes = append(e.Changes, struct {
		Note string `yaml:"note"`
	}{note})
	b, err := yaml.Marshal([]changelogEntry{e})
	if err != nil {
		return "", fmt.Errorf("changelog: %w", err)
	}
	f, err := os.CreateTemp("", "ferry-changelog-*.yml")
	if err != nil {
		return "", fmt.Errorf("changelog: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("changelog: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("changelog: %w", err)
	}
	return f.Name(), nil
}
