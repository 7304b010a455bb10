// Package notices tells what third-party software a Ferry binary contains
// and where the licence texts that came with it are, for the app's About.
//
// The module list comes from the binary's own build info, so it is exact for
// any build. The texts are in THIRD_PARTY_LICENSES, which the release
// packages install next to the program (`go run ./packaging/tool licenses`
// writes it at build time); a plain `go build` has none.
package notices

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
)

// License is Ferry's own licence, as an SPDX identifier.
const License = "Apache-2.0"

// Module is one module linked into the running binary.
type Module struct {
	Path, Version string
}

// Modules lists the modules linked into the running binary, in the order
// its build info records them (sorted by path), with the Go runtime first.
func Modules() []Module {
	out := []Module{{Path: "Go standard library and runtime", Version: runtime.Version()}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		out = append(out, Module{Path: m.Path, Version: m.Version})
	}
	return out
}

// ErrNoTexts means no THIRD_PARTY_LICENSES file is installed with the
// program (a build from source).
var ErrNoTexts = errors.New("no THIRD_PARTY_LICENSES file next to the program")

// candidates are where each package puts the file, relative to the folder
// holding the executable.
var candidates = []string{
	"THIRD_PARTY_LICENSES.txt",                                  // Windows installer and portable zip
	"THIRD_PARTY_LICENSES",                                      // next to the program
	"../share/doc/ferry/THIRD_PARTY_LICENSES",                   // .deb, tarball
	"../share/licenses/ferry/THIRD_PARTY_LICENSES",              // .rpm
	"../share/licenses/io.ferrydrop.ferry/THIRD_PARTY_LICENSES", // Flatpak
	"../Resources/THIRD_PARTY_LICENSES",                         // macOS .app
}

// ThirdPartyTexts reads the licence texts installed with the executable at
// exe (os.Executable's answer), returning the file's path and contents, or
// an error matching ErrNoTexts.
func ThirdPartyTexts(exe string) (path, text string, err error) {
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	dir := filepath.Dir(exe)
	for _, c := range candidates {
		p := filepath.Join(dir, filepath.FromSlash(c))
		b, err := os.ReadFile(p)
		if err == nil {
			return p, string(b), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return p, "", fmt.Errorf("notices: %w", err)
		}
	}
	return "", "", ErrNoTexts
}
