package packaging

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ferrydrop/ferry/discovery"
)

// plistDict reads the top-level <dict> of an XML property list into key ->
// string or []string (enough for what we keep in packaging/macos).
func plistDict(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dict struct {
			Items []struct {
				XMLName xml.Name
				Text    string   `xml:",chardata"`
				Strings []string `xml:"string"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]any{}
	items := doc.Dict.Items
	for i := 0; i+1 < len(items); i += 2 {
		if items[i].XMLName.Local != "key" {
			t.Fatalf("%s: expected <key>, got <%s>", path, items[i].XMLName.Local)
		}
		v := items[i+1]
		switch v.XMLName.Local {
		case "string":
			out[items[i].Text] = v.Text
		case "array":
			out[items[i].Text] = v.Strings
		default:
			out[items[i].Text] = v.XMLName.Local
		}
	}
	return out
}

// What macOS 15 needs to let the app discover devices is in the Info.plist
// additions, with the service type discovery really uses.
func TestMacOSInfoPlist(t *testing.T) {
	d := plistDict(t, "macos/Info.extra.plist")
	if s, _ := d["NSLocalNetworkUsageDescription"].(string); len(s) < 20 {
		t.Errorf("NSLocalNetworkUsageDescription = %q: the permission prompt needs a sentence", s)
	}
	services, _ := d["NSBonjourServices"].([]string)
	if !slices.Contains(services, discovery.ServiceType) {
		t.Errorf("NSBonjourServices = %q, want it to hold %q (discovery.ServiceType)", services, discovery.ServiceType)
	}
}

// The macOS workflow is valid YAML with the shape GitHub Actions reads, and
// runs the steps the README promises; actionlint checks it in depth when it
// is installed.
func TestMacOSWorkflow(t *testing.T) {
	path := filepath.Join("..", ".github", "workflows", "macos.yml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Name string         `yaml:"name"`
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			RunsOn   string `yaml:"runs-on"`
			Strategy struct {
				Matrix struct {
					Include []map[string]string `yaml:"include"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				If   string            `yaml:"if"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(false)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if wf.Name == "" || len(wf.On) == 0 || len(wf.Jobs) == 0 {
		t.Fatalf("%s lacks name, on or jobs", path)
	}
	var runs []string
	var runners []string
	for _, j := range wf.Jobs {
		for _, inc := range j.Strategy.Matrix.Include {
			runners = append(runners, inc["runner"])
		}
		for _, s := range j.Steps {
			if s.Uses == "" && s.Run == "" {
				t.Errorf("step %q neither uses nor runs anything", s.Name)
			}
			runs = append(runs, s.Run)
		}
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"scripts/package.sh cli macos", "go test", "./cmd/ferry-cli/", "notarytool submit", "stapler staple", "NSBonjourServices"} {
		if !strings.Contains(all, want) {
			t.Errorf("the workflow never runs %q", want)
		}
	}
	for _, r := range runners {
		if !strings.HasPrefix(r, "macos-") {
			t.Errorf("runner %q is not a macOS one", r)
		}
	}
	if lint, err := exec.LookPath("actionlint"); err == nil {
		run(t, "", nil, lint, path)
	} else {
		t.Log("actionlint not installed: checked the YAML shape only")
	}
}
