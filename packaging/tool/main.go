// Command tool does the steps of scripts/package.sh that are easier and more
// reproducible in Go than in shell: the icon sizes and the .deb.
//
//	go run ./packaging/tool icons SRC.png OUTDIR
//	go run ./packaging/tool deb CONFIG.yaml OUT.deb
//
// icons writes OUTDIR/hicolor/NxN/apps/<app id>.png for the freedesktop icon
// sizes and OUTDIR/ferry.ico (PNG-compressed entries, Windows Vista and later)
// for the Windows resources and installer.
//
// deb builds a Debian package with nfpm from an nfpm YAML file; ${VAR} in it
// expands from the environment (scripts/package.sh sets VERSION, ARCH, BUILD).
// Every file time in the package is SOURCE_DATE_EPOCH (required), so the same
// inputs give the same bytes.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

var errUsage = errors.New("usage: tool icons SRC.png OUTDIR | tool deb CONFIG.yaml OUT.deb")

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "packaging/tool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 3 {
		return errUsage
	}
	switch args[0] {
	case "icons":
		return writeIcons(args[1], args[2])
	case "deb":
		mtime, err := sourceDate()
		if err != nil {
			return err
		}
		return writeDeb(args[1], args[2], mtime)
	}
	return errUsage
}

// sourceDate reads SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/).
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH is not set (scripts/package.sh sets it from the last commit)")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(n, 0).UTC(), nil
}
