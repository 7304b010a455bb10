package packaging

import (
	"encoding/xml"
	"os"
	"slices"
	"testing"

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
