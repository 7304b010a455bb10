package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// actionlint is the GitHub Actions linter the test suite runs (a Go
// module: `go run` builds it once into the build cache). With shellcheck
// installed it lints every run: script too.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// workflow is the part of a GitHub Actions workflow the checks read.
type workflow struct {
	Name string         `yaml:"name"`
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		RunsOn   string `yaml:"runs-on"`
		Uses     string `yaml:"uses"`
		Needs    any    `yaml:"needs"`
		Strategy struct {
			Matrix struct {
				Include []map[string]string `yaml:"include"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			If   string            `yaml:"if"`
			With map[string]any    `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T, name string) (workflow, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if wf.Name == "" || len(wf.On) == 0 || len(wf.Jobs) == 0 {
		t.Fatalf("%s lacks name, on or jobs", name)
	}
	var runs []string
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			if s.Uses == "" && s.Run == "" {
				t.Errorf("%s: step %q neither uses nor runs anything", name, s.Name)
			}
			runs = append(runs, s.Run, s.Uses)
		}
	}
	return wf, strings.Join(runs, "\n")
}

// Every workflow passes actionlint (syntax, expressions, runner labels,
// action inputs, and the run: scripts through shellcheck when installed),
// and each does what the README says: CI runs scripts/test.sh on Linux and
// the CLI, QUIC, store and installer checks on Windows; the macOS workflow
// builds and checks the DMG and signs and notarizes only with every secret;
// the release builds everything and publishes it with SHA256SUMS.
func TestWorkflows(t *testing.T) {
	needTools(t, "go")
	files, err := filepath.Glob(filepath.Join("..", ".github", "workflows", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	t.Run("actionlint", func(t *testing.T) {
		if _, err := exec.LookPath("shellcheck"); err != nil {
			t.Log("shellcheck not installed: actionlint skips the run: scripts")
		}
		run(t, repoRoot(t), nil, "go", append([]string{"run", actionlint}, prefixed(".github/workflows/", baseNames(files))...)...)
	})

	t.Run("ci", func(t *testing.T) {
		wf, all := readWorkflow(t, "ci.yml")
		for _, ev := range []string{"push", "pull_request"} {
			if _, ok := wf.On[ev]; !ok {
				t.Errorf("ci.yml does not run on %s", ev)
			}
		}
		for _, want := range []string{"scripts/test.sh", "actions/setup-go@", "./engine/...", "./cmd/ferry-cli/...", "--transport", "makensis", "uninstall.exe"} {
			if !strings.Contains(all, want) {
				t.Errorf("ci.yml never runs %q", want)
			}
		}
		var oses []string
		for _, j := range wf.Jobs {
			oses = append(oses, strings.SplitN(j.RunsOn, "-", 2)[0])
			for _, s := range j.Steps {
				if strings.HasPrefix(s.Uses, "actions/setup-go@") && s.With["cache"] != true {
					t.Errorf("setup-go without the module and build caches")
				}
			}
		}
		slices.Sort(oses)
		if !slices.Equal(oses, []string{"ubuntu", "windows"}) {
			t.Errorf("ci.yml runs on %v, want ubuntu and windows (macOS is macos.yml)", oses)
		}
	})

	t.Run("macos", func(t *testing.T) {
		wf, all := readWorkflow(t, "macos.yml")
		for _, want := range []string{"scripts/package.sh cli macos", "go test", "./cmd/ferry-cli/", "notarytool submit", "stapler staple",
			"NSBonjourServices", "hdiutil", "LSApplicationCategoryType", ".dmg"} {
			if !strings.Contains(all, want) {
				t.Errorf("macos.yml never runs %q", want)
			}
		}
		if _, ok := wf.On["workflow_call"]; !ok {
			t.Error("macos.yml cannot be called by release.yml (no workflow_call)")
		}
		j := wf.Jobs["app"]
		var runners []string
		for _, inc := range j.Strategy.Matrix.Include {
			runners = append(runners, inc["runner"]+"/"+inc["arch"])
		}
		slices.Sort(runners)
		if !slices.Equal(runners, []string{"macos-15-intel/amd64", "macos-15/arm64"}) {
			t.Errorf("runners %v", runners)
		}
		for env, secrets := range map[string][]string{
			"HAVE_CERT":   {"MACOS_CERTIFICATE_P12", "MACOS_CERTIFICATE_PASSWORD", "MACOS_SIGN_IDENTITY"},
			"HAVE_NOTARY": {"APPLE_ID", "APPLE_TEAM_ID", "APPLE_APP_PASSWORD"},
		} {
			for _, s := range secrets {
				if !strings.Contains(j.Env[env], "secrets."+s+" != ''") {
					t.Errorf("%s does not check %s", env, s)
				}
			}
		}
		for _, s := range j.Steps {
			if s.Env["CLI_TARGETS"] != "" && s.Env["CLI_TARGETS"] != "darwin/${{ matrix.arch }}" {
				t.Errorf("each matrix job should build only its own CLI: CLI_TARGETS=%q", s.Env["CLI_TARGETS"])
			}
		}
	})

	t.Run("release", func(t *testing.T) {
		wf, all := readWorkflow(t, "release.yml")
		push, _ := wf.On["push"].(map[string]any)
		if tags, _ := push["tags"].([]any); len(tags) == 0 {
			t.Error("release.yml does not run on tags")
		}
		for _, want := range []string{"scripts/package.sh", "scripts/package.sh manifests", "sha256sum -c SHA256SUMS", "gh release create", "osslsigncode"} {
			if !strings.Contains(all, want) {
				t.Errorf("release.yml never runs %q", want)
			}
		}
		if wf.Jobs["macos"].Uses != "./.github/workflows/macos.yml" {
			t.Errorf("release.yml does not build the macOS artefacts with macos.yml")
		}
		// The publish job downloads every artifact into one folder
		// (merge-multiple), where two files of one name overwrite each other
		// in no set order, or mix (actions/download-artifact#298, #395). The
		// darwin CLIs come from macos.yml, signed and notarized there: the
		// Linux job's unsigned ones must stay out of its upload.
		for _, s := range wf.Jobs["linux"].Steps {
			if !strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				continue
			}
			path, _ := s.With["path"].(string)
			if !slices.Contains(strings.Fields(path), "!dist/ferry-cli-*-darwin-*") {
				t.Errorf("release.yml's linux job uploads its darwin CLIs too (path %q): they collide with macos.yml's signed ones in the publish job's merged download", path)
			}
		}
	})
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
