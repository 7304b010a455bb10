package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// Package-manager identity, the same in every manifest.
const (
	wingetID        = "FerryDrop.Ferry"
	wingetSchemaVer = "1.10.0" // packaging/schemas has this version's schemas
	publisher       = "Ferry developers"
	homepage        = "https://github.com/ferrydrop/ferry"
	shortDesc       = "AirDrop-style file transfer for the local network"
)

// writeManifests writes winget's, Scoop's, Homebrew's and Flatpak's manifests for the
// artefacts of version found in dist into dist/manifests, each with the
// SHA-256 of the file it downloads. A manifest whose artefact is missing
// (the DMGs are built on macOS) is skipped with a note; none at all is an
// error.
func writeManifests(dist, version, date string) error {
	base := os.Getenv("FERRY_RELEASE_URL")
	if base == "" {
		base = homepage + "/releases/download/v" + version
	}
	out := filepath.Join(dist, "manifests")
	if err := os.RemoveAll(out); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	wrote := 0
	setup := fmt.Sprintf("Ferry-%s-windows-amd64-setup.exe", version)
	if sum, err := fileSHA256(filepath.Join(dist, setup)); err == nil {
		if err := writeWinget(filepath.Join(out, "winget"), version, date, base+"/"+setup, sum); err != nil {
			return err
		}
		wrote++
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		fmt.Fprintf(os.Stderr, "manifests: no %s: no winget manifest\n", setup)
	}
	zipName := fmt.Sprintf("Ferry-%s-windows-amd64-portable.zip", version)
	if sum, err := fileSHA256(filepath.Join(dist, zipName)); err == nil {
		if err := writeScoop(filepath.Join(out, "scoop"), version, base+"/"+zipName, sum); err != nil {
			return err
		}
		wrote++
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		fmt.Fprintf(os.Stderr, "manifests: no %s: no Scoop manifest\n", zipName)
	}
	tarball := fmt.Sprintf("Ferry-%s-linux-amd64.tar.xz", version)
	if sum, err := fileSHA256(filepath.Join(dist, tarball)); err == nil {
		if err := writeFlatpak(filepath.Join(out, "flatpak"), base+"/"+tarball, sum); err != nil {
			return err
		}
		wrote++
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else {
		fmt.Fprintf(os.Stderr, "manifests: no %s: no Flatpak manifest\n", tarball)
	}
	arm, errArm := fileSHA256(filepath.Join(dist, fmt.Sprintf("Ferry-%s-macos-arm64.dmg", version)))
	intel, errIntel := fileSHA256(filepath.Join(dist, fmt.Sprintf("Ferry-%s-macos-amd64.dmg", version)))
	switch {
	case errArm == nil && errIntel == nil:
		if err := writeCask(filepath.Join(out, "homebrew"), version, base, arm, intel); err != nil {
			return err
		}
		wrote++
	case errors.Is(errArm, fs.ErrNotExist) || errors.Is(errIntel, fs.ErrNotExist):
		fmt.Fprintln(os.Stderr, "manifests: the two macOS DMGs are not both there: no Homebrew cask")
	default:
		return errors.Join(errArm, errIntel)
	}
	if wrote == 0 {
		return fmt.Errorf("manifests: none of the installer, the portable zip or the DMGs is in %s", dist)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("manifests: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// winget's multi-file manifest (what winget-pkgs takes): version,
// installer and default locale, fields in the order winget's own tools write.
type wingetVersion struct {
	PackageIdentifier string `yaml:"PackageIdentifier"`
	PackageVersion    string `yaml:"PackageVersion"`
	DefaultLocale     string `yaml:"DefaultLocale"`
	ManifestType      string `yaml:"ManifestType"`
	ManifestVersion   string `yaml:"ManifestVersion"`
}

type wingetInstaller struct {
	PackageIdentifier      string              `yaml:"PackageIdentifier"`
	PackageVersion         string              `yaml:"PackageVersion"`
	InstallerType          string              `yaml:"InstallerType"`
	Scope                  string              `yaml:"Scope"`
	InstallModes           []string            `yaml:"InstallModes"`
	UpgradeBehavior        string              `yaml:"UpgradeBehavior"`
	Commands               []string            `yaml:"Commands"`
	ReleaseDate            string              `yaml:"ReleaseDate"`
	AppsAndFeaturesEntries []map[string]string `yaml:"AppsAndFeaturesEntries"`
	Installers             []wingetFile        `yaml:"Installers"`
	ManifestType           string              `yaml:"ManifestType"`
	ManifestVersion        string              `yaml:"ManifestVersion"`
}

type wingetFile struct {
	Architecture    string `yaml:"Architecture"`
	InstallerURL    string `yaml:"InstallerUrl"`
	InstallerSha256 string `yaml:"InstallerSha256"`
}

type wingetLocale struct {
	PackageIdentifier string   `yaml:"PackageIdentifier"`
	PackageVersion    string   `yaml:"PackageVersion"`
	PackageLocale     string   `yaml:"PackageLocale"`
	Publisher         string   `yaml:"Publisher"`
	PublisherURL      string   `yaml:"PublisherUrl"`
	PackageName       string   `yaml:"PackageName"`
	PackageURL        string   `yaml:"PackageUrl"`
	License           string   `yaml:"License"`
	LicenseURL        string   `yaml:"LicenseUrl"`
	ShortDescription  string   `yaml:"ShortDescription"`
	Moniker           string   `yaml:"Moniker"`
	Tags              []string `yaml:"Tags"`
	ManifestType      string   `yaml:"ManifestType"`
	ManifestVersion   string   `yaml:"ManifestVersion"`
}

func writeWinget(dir, version, date, url, sum string) error {
	// winget-pkgs' layout: manifests/<first letter>/<publisher>/<name>/<version>/.
	dir = filepath.Join(dir, "manifests", "f", "FerryDrop", "Ferry", version)
	files := []struct {
		name, kind string
		doc        any
	}{
		{wingetID + ".yaml", "version", wingetVersion{wingetID, version, "en-US", "version", wingetSchemaVer}},
		{wingetID + ".installer.yaml", "installer", wingetInstaller{
			PackageIdentifier: wingetID, PackageVersion: version,
			InstallerType: "nullsoft", Scope: "user",
			InstallModes: []string{"interactive", "silent"}, UpgradeBehavior: "install",
			Commands: []string{"ferry-cli"}, ReleaseDate: date,
			AppsAndFeaturesEntries: []map[string]string{{"DisplayName": "Ferry", "Publisher": publisher}},
			Installers:             []wingetFile{{"x64", url, strings.ToUpper(sum)}},
			ManifestType:           "installer", ManifestVersion: wingetSchemaVer,
		}},
		{wingetID + ".locale.en-US.yaml", "defaultLocale", wingetLocale{
			PackageIdentifier: wingetID, PackageVersion: version, PackageLocale: "en-US",
			Publisher: publisher, PublisherURL: homepage, PackageName: "Ferry", PackageURL: homepage,
			License: "Apache-2.0", LicenseURL: homepage + "/blob/main/LICENSE",
			ShortDescription: shortDesc, Moniker: "ferry",
			Tags:         []string{"airdrop", "file-transfer", "lan", "quic", "share"},
			ManifestType: "defaultLocale", ManifestVersion: wingetSchemaVer,
		}},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	for _, f := range files {
		var b bytes.Buffer
		fmt.Fprintf(&b, "# yaml-language-server: $schema=https://aka.ms/winget-manifest.%s.%s.schema.json\n\n", f.kind, wingetSchemaVer)
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(f.doc); err != nil {
			return fmt.Errorf("manifests: winget: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("manifests: %w", err)
		}
	}
	return nil
}

// scoop is a Scoop app manifest (an "extras" bucket entry).
type scoop struct {
	Version     string     `json:"version"`
	Description string     `json:"description"`
	Homepage    string     `json:"homepage"`
	License     string     `json:"license"`
	URL         string     `json:"url"`
	Hash        string     `json:"hash"`
	ExtractDir  string     `json:"extract_dir"`
	Bin         []string   `json:"bin"`
	Shortcuts   [][]string `json:"shortcuts"`
	Persist     string     `json:"persist,omitempty"`
	Checkver    string     `json:"checkver"`
	Autoupdate  struct {
		URL        string `json:"url"`
		ExtractDir string `json:"extract_dir"`
	} `json:"autoupdate"`
}

func writeScoop(dir, version, url, sum string) error {
	m := scoop{
		Version: version, Description: shortDesc, Homepage: homepage, License: "Apache-2.0",
		URL: url, Hash: sum, ExtractDir: "Ferry-" + version,
		Bin: []string{"ferry-cli.exe"}, Shortcuts: [][]string{{"ferry.exe", "Ferry"}},
		Checkver: "github",
	}
	m.Autoupdate.URL = homepage + "/releases/download/v$version/Ferry-$version-windows-amd64-portable.zip"
	m.Autoupdate.ExtractDir = "Ferry-$version"
	b, err := json.MarshalIndent(m, "", "    ")
	if err != nil {
		return fmt.Errorf("manifests: scoop: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ferry.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
}

// cask is the Homebrew cask, stanzas in the order `brew style` wants.
var cask = template.Must(template.New("cask").Parse(`cask "ferry" do
  arch arm: "arm64", intel: "amd64"

  version "{{.Version}}"
  sha256 arm:   "{{.Arm}}",
         intel: "{{.Intel}}"

  url "{{.Base}}/Ferry-#{version}-macos-#{arch}.dmg"
  name "Ferry"
  desc "{{.Desc}}"
  homepage "{{.Homepage}}"

  depends_on macos: ">= :monterey"

  app "Ferry.app"

  zap trash: [
    "~/Library/Application Support/Ferry",
    "~/Library/Preferences/fyne/io.ferrydrop.ferry",
  ]
end
`))

func writeCask(dir, version, base, arm, intel string) error {
	// The URL names the version through the cask's own #{version}.
	base = strings.ReplaceAll(base, version, "#{version}")
	var b bytes.Buffer
	if err := cask.Execute(&b, map[string]string{
		"Version": version, "Arm": arm, "Intel": intel, "Base": base, "Desc": "File transfer for the local network",
		"Homepage": homepage,
	}); err != nil {
		return fmt.Errorf("manifests: cask: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ferry.rb"), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
}

// flatpak is the Flatpak (Flathub) manifest: the release tarball's
// binaries on the freedesktop runtime, with the permissions Ferry needs
// (network, X11, GL, the tray and notifications, the Downloads folder).
var flatpak = template.Must(template.New("flatpak").Parse(`# Flatpak manifest for Flathub, written by scripts/package.sh manifests.
# It repackages the release tarball; build it with
#   flatpak-builder --user --install build io.ferrydrop.ferry.yml
app-id: io.ferrydrop.ferry
runtime: org.freedesktop.Platform
runtime-version: "24.08"
sdk: org.freedesktop.Sdk
command: ferry
finish-args:
  - --share=network
  - --share=ipc
  - --socket=x11
  - --device=dri
  - --filesystem=xdg-download
  - --talk-name=org.kde.StatusNotifierWatcher
  - --talk-name=org.freedesktop.Notifications
modules:
  - name: ferry
    buildsystem: simple
    build-commands:
      - install -Dm755 usr/local/bin/ferry /app/bin/ferry
      - install -Dm755 usr/local/bin/ferry-cli /app/bin/ferry-cli
      - install -Dm644 usr/local/share/applications/io.ferrydrop.ferry.desktop /app/share/applications/io.ferrydrop.ferry.desktop
      - install -Dm644 usr/local/share/metainfo/io.ferrydrop.ferry.metainfo.xml /app/share/metainfo/io.ferrydrop.ferry.metainfo.xml
      - mkdir -p /app/share/icons && cp -r usr/local/share/icons/hicolor /app/share/icons/
      - install -Dm644 -t /app/share/licenses/io.ferrydrop.ferry LICENSE usr/local/share/doc/ferry/THIRD_PARTY_LICENSES
    sources:
      - type: archive
        url: {{.URL}}
        sha256: {{.Sum}}
        only-arches:
          - x86_64
`))

func writeFlatpak(dir, url, sum string) error {
	var b bytes.Buffer
	if err := flatpak.Execute(&b, map[string]string{"URL": url, "Sum": sum}); err != nil {
		return fmt.Errorf("manifests: flatpak: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ferrydrop.ferry.yml"), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
}
