// Package version says which build of Ferry is running: the release version,
// the commit it was built from and that commit's date.
//
// Release builds (scripts/package.sh) set the three variables with the linker:
//
//	go build -ldflags "-X github.com/ferrydrop/ferry/internal/version.Version=0.1.0 \
//	  -X github.com/ferrydrop/ferry/internal/version.Commit=0f03e5c \
//	  -X github.com/ferrydrop/ferry/internal/version.Date=2025-11-30T22:52:00Z" ./cmd/ferry-cli
//
// A plain `go build` leaves them empty; Get then falls back to the VCS data
// the go command embeds (runtime/debug.ReadBuildInfo) and otherwise to "dev".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X at release builds; empty otherwise.
var (
	// Version is the release version, e.g. "0.1.0".
	Version string
	// Commit is the git commit the build comes from (short hash, "-dirty"
	// when the tree had uncommitted changes).
	Commit string
	// Date is the commit's date, RFC 3339 in UTC. It is the commit's and not
	// the build's, so that two builds of one commit are identical.
	Date string
)

// dev stands in for any field nobody set.
const dev = "dev"

// Info describes one build.
type Info struct {
	Version string // "0.1.0", or "dev"
	Commit  string // "0f03e5c", "0f03e5c-dirty", or "dev"
	Date    string // RFC 3339, or "dev"
}

// Get returns this build's information: the linker-set values, else the VCS
// data embedded by the go command, else "dev".
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, Date, bi)
}

// resolve fills what the linker did not set from the build info (which may be
// nil) and the rest with "dev".
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date}
	if bi != nil {
		var rev, tm string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				tm = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if info.Commit == "" && rev != "" {
			info.Commit = rev[:min(len(rev), 12)]
			if modified {
				info.Commit += "-dirty"
			}
		}
		if info.Date == "" {
			info.Date = tm
		}
		// A module version ("v0.1.0") exists when built with `go install
		// module@version`; "(devel)" means a source checkout.
		if v := bi.Main.Version; info.Version == "" && v != "" && v != "(devel)" {
			info.Version = v
		}
	}
	for _, f := range []*string{&info.Version, &info.Commit, &info.Date} {
		if *f == "" {
			*f = dev
		}
	}
	return info
}

// String is the one line `--version` prints, e.g.
// "0.1.0 (commit 0f03e5c, 2025-11-30T22:52:00Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s %s/%s)", i.Version, i.Commit, i.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Short is the version and commit, for the About line: "0.1.0 (0f03e5c)".
func (i Info) Short() string {
	return fmt.Sprintf("%s (%s)", i.Version, i.Commit)
}
