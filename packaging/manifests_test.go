package packaging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// schema compiles one of the published schemas kept in packaging/schemas.
func schema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("schemas", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "file:///schemas/" + name
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// yamlAsJSON reads a YAML file into the values encoding/json would give.
func yamlAsJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The winget, Scoop, Homebrew cask and Flatpak manifests that
// `scripts/package.sh manifests` writes validate against the formats'
// published schemas (winget, Scoop) or their documented stanzas (cask,
// Flatpak), and every checksum in them is that of the artefact its URL names,
// recomputed here. The DMGs are built on macOS only: stand-ins with their
// names let the cask be generated and checked here.
func TestManifests(t *testing.T) {
	a := dist(t)
	d := t.TempDir()
	for _, name := range []string{"Ferry-VERSION-windows-amd64-setup.exe", "Ferry-VERSION-windows-amd64-portable.zip", "Ferry-VERSION-linux-amd64.tar.xz"} {
		if err := os.Symlink(a.path(name), filepath.Join(d, filepath.Base(a.path(name)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, arch := range []string{"arm64", "amd64"} {
		p := payload(t, "dmg-"+arch, 4096)
		if err := os.Rename(p, filepath.Join(d, fmt.Sprintf("Ferry-%s-macos-%s.dmg", a.version, arch))); err != nil {
			t.Fatal(err)
		}
	}
	run(t, repoRoot(t), append(a.env[:len(a.env):len(a.env)], "DIST="+d), "scripts/package.sh", "manifests")
	m := filepath.Join(d, "manifests")
	release := "https://github.com/ferrydrop/ferry/releases/download/v" + a.version + "/"
	// artefact maps a release URL back to the file in d.
	artefact := func(url string) string {
		name, ok := strings.CutPrefix(url, release)
		if !ok {
			t.Errorf("URL %q is not in the v%s release", url, a.version)
		}
		return filepath.Join(d, name)
	}

	t.Run("winget", func(t *testing.T) {
		dir := filepath.Join(m, "winget/manifests/f/FerryDrop/Ferry", a.version)
		for file, kind := range map[string]string{
			"FerryDrop.Ferry.yaml": "version", "FerryDrop.Ferry.installer.yaml": "installer", "FerryDrop.Ferry.locale.en-US.yaml": "defaultLocale",
		} {
			v := yamlAsJSON(t, filepath.Join(dir, file))
			if err := schema(t, "winget-manifest."+kind+".1.10.0.json").Validate(v); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			doc := v.(map[string]any)
			if doc["PackageVersion"] != a.version || doc["ManifestType"] != kind {
				t.Errorf("%s: version %v, type %v", file, doc["PackageVersion"], doc["ManifestType"])
			}
			if kind == "defaultLocale" && doc["License"] != "Apache-2.0" {
				t.Errorf("%s: licence %v", file, doc["License"])
			}
			if kind != "installer" {
				continue
			}
			inst := doc["Installers"].([]any)[0].(map[string]any)
			url, sum := inst["InstallerUrl"].(string), inst["InstallerSha256"].(string)
			// The schema really constrains: a checksum that is not one fails.
			inst["InstallerSha256"] = "not a checksum"
			if err := schema(t, "winget-manifest.installer.1.10.0.json").Validate(v); err == nil {
				t.Error("the installer schema accepts a malformed InstallerSha256")
			}
			if got := sha256File(t, artefact(url)); !strings.EqualFold(got, sum) || !strings.HasSuffix(url, "-setup.exe") {
				t.Errorf("installer %s: sha256 %s in the manifest, %s recomputed", url, sum, got)
			}
		}
	})

	t.Run("scoop", func(t *testing.T) {
		f, err := os.Open(filepath.Join(m, "scoop/ferry.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := schema(t, "scoop-schema.json").Validate(v); err != nil {
			t.Error(err)
		}
		doc := v.(map[string]any)
		url, sum := doc["url"].(string), doc["hash"].(string)
		doc["hash"] = "md5:xyz"
		if err := schema(t, "scoop-schema.json").Validate(v); err == nil {
			t.Error("the Scoop schema accepts a malformed hash")
		}
		if got := sha256File(t, artefact(url)); got != sum || !strings.HasSuffix(url, "-portable.zip") {
			t.Errorf("%s: hash %s in the manifest, %s recomputed", url, sum, got)
		}
		if doc["extract_dir"] != "Ferry-"+a.version || doc["license"] != "Apache-2.0" {
			t.Errorf("extract_dir %v, license %v", doc["extract_dir"], doc["license"])
		}
	})

	t.Run("homebrew", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(m, "homebrew/ferry.rb"))
		if err != nil {
			t.Fatal(err)
		}
		cask := string(b)
		// Homebrew publishes no schema for casks (they are Ruby): check the
		// stanzas `brew audit` requires, in `brew style`'s order.
		order := []string{`cask "ferry" do`, "arch arm:", "version ", "sha256 arm:", "url ", "name ", "desc ", "homepage ", "depends_on macos:", `app "Ferry.app"`, "zap trash:", "end"}
		at := 0
		for _, s := range order {
			i := strings.Index(cask[at:], s)
			if i < 0 {
				t.Fatalf("the cask lacks %q after offset %d:\n%s", s, at, cask)
			}
			at += i + len(s)
		}
		version := regexp.MustCompile(`(?m)^  version "([^"]+)"$`).FindStringSubmatch(cask)
		sums := regexp.MustCompile(`(arm|intel):\s+"([0-9a-f]{64})"`).FindAllStringSubmatch(cask, -1)
		url := regexp.MustCompile(`(?m)^  url "([^"]+)"$`).FindStringSubmatch(cask)
		if version == nil || version[1] != a.version || len(sums) != 2 || url == nil {
			t.Fatalf("cask version %v, sha256 %v, url %v", version, sums, url)
		}
		for _, s := range sums {
			arch := map[string]string{"arm": "arm64", "intel": "amd64"}[s[1]]
			u := strings.NewReplacer("#{version}", a.version, "#{arch}", arch).Replace(url[1])
			if got := sha256File(t, artefact(u)); got != s[2] {
				t.Errorf("%s: sha256 %s in the cask, %s recomputed", u, s[2], got)
			}
		}
	})

	t.Run("flatpak", func(t *testing.T) {
		// flatpak-builder needs Flathub's runtimes (org.freedesktop.Sdk),
		// which cannot be installed here: check the manifest's shape, that
		// its source is the tarball with the right checksum, and that every
		// file its build commands install is in that tarball.
		var mf struct {
			AppID          string   `yaml:"app-id"`
			Runtime        string   `yaml:"runtime"`
			RuntimeVersion string   `yaml:"runtime-version"`
			SDK            string   `yaml:"sdk"`
			Command        string   `yaml:"command"`
			FinishArgs     []string `yaml:"finish-args"`
			Modules        []struct {
				Name          string   `yaml:"name"`
				Buildsystem   string   `yaml:"buildsystem"`
				BuildCommands []string `yaml:"build-commands"`
				Sources       []struct {
					Type       string   `yaml:"type"`
					URL        string   `yaml:"url"`
					SHA256     string   `yaml:"sha256"`
					OnlyArches []string `yaml:"only-arches"`
				} `yaml:"sources"`
			} `yaml:"modules"`
		}
		b, err := os.ReadFile(filepath.Join(m, "flatpak/io.ferrydrop.ferry.yml"))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&mf); err != nil {
			t.Fatal(err)
		}
		if mf.AppID != "io.ferrydrop.ferry" || mf.Runtime != "org.freedesktop.Platform" || mf.SDK != "org.freedesktop.Sdk" ||
			mf.RuntimeVersion == "" || mf.Command != "ferry" || len(mf.Modules) != 1 {
			t.Fatalf("manifest %+v", mf)
		}
		for _, want := range []string{"--share=network", "--socket=x11", "--device=dri"} {
			if !strings.Contains(strings.Join(mf.FinishArgs, " "), want) {
				t.Errorf("finish-args lack %s", want)
			}
		}
		mod := mf.Modules[0]
		if len(mod.Sources) != 1 || mod.Sources[0].Type != "archive" || !slices.Equal(mod.Sources[0].OnlyArches, []string{"x86_64"}) {
			t.Fatalf("sources %+v", mod.Sources)
		}
		tarball := artefact(mod.Sources[0].URL)
		if got := sha256File(t, tarball); got != mod.Sources[0].SHA256 {
			t.Errorf("%s: sha256 %s in the manifest, %s recomputed", tarball, mod.Sources[0].SHA256, got)
		}
		x := t.TempDir()
		run(t, "", nil, "tar", "-xJf", tarball, "-C", x, "--strip-components=1")
		for _, c := range mod.BuildCommands {
			for _, w := range strings.Fields(c) {
				if strings.HasPrefix(w, "usr/") || w == "LICENSE" {
					if _, err := os.Stat(filepath.Join(x, w)); err != nil {
						t.Errorf("build command %q: %v", c, err)
					}
				}
			}
		}
	})

	// The dist's own manifests (made without the DMGs) are the same files.
	for _, f := range []string{"scoop/ferry.json", "flatpak/io.ferrydrop.ferry.yml", "winget/manifests/f/FerryDrop/Ferry/" + a.version + "/FerryDrop.Ferry.installer.yaml"} {
		if sha256File(t, filepath.Join(a.dist, "manifests", f)) != sha256File(t, filepath.Join(m, f)) {
			t.Errorf("manifests/%s differs between the dist and this run", f)
		}
	}
}
