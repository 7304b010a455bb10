package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/ferrydrop/ferry", Version: "(devel)"}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "nothing at all", want: Info{"dev", "dev", "dev"}},
		{name: "plain go build without vcs", bi: vcs(), want: Info{"dev", "dev", "dev"}},
		{
			name:    "linker stamps win over vcs",
			version: "0.1.0", commit: "0f03e5c", date: "2025-11-30T22:52:00Z",
			bi:   vcs("vcs.revision", "ffffffffffffffffffff", "vcs.time", "2000-01-01T00:00:00Z"),
			want: Info{"0.1.0", "0f03e5c", "2025-11-30T22:52:00Z"},
		},
		{
			name: "vcs fallback, clean",
			bi:   vcs("vcs.revision", "0f03e5c1234567890abcdef", "vcs.time", "2025-11-30T22:52:00Z", "vcs.modified", "false"),
			want: Info{"dev", "0f03e5c12345", "2025-11-30T22:52:00Z"},
		},
		{
			name: "vcs fallback, dirty",
			bi:   vcs("vcs.revision", "0f03e5c1234567890abcdef", "vcs.modified", "true"),
			want: Info{"dev", "0f03e5c12345-dirty", "dev"},
		},
		{
			name: "short revision is kept whole",
			bi:   vcs("vcs.revision", "abc"),
			want: Info{"dev", "abc", "dev"},
		},
		{
			name: "go install module@version",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: Info{"v0.2.0", "dev", "dev"},
		},
		{
			name:    "only the version stamped",
			version: "0.1.0",
			bi:      vcs("vcs.revision", "0f03e5c1234567890abcdef"),
			want:    Info{"0.1.0", "0f03e5c12345", "dev"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.commit, tc.date, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	i := Info{"0.1.0", "0f03e5c", "2025-11-30T22:52:00Z"}
	if s := i.String(); !strings.HasPrefix(s, "0.1.0 (commit 0f03e5c, 2025-11-30T22:52:00Z, go") {
		t.Errorf("String() = %q", s)
	}
	if s := i.Short(); s != "0.1.0 (0f03e5c)" {
		t.Errorf("Short() = %q", s)
	}
	// An untouched test binary still says something sensible.
	if g := Get(); g.Version == "" || g.Commit == "" || g.Date == "" {
		t.Errorf("Get() has empty fields: %+v", g)
	}
}
