// Command tool does the steps of scripts/package.sh that are easier and more
// reproducible in Go than in shell: the icon sizes, the third-party
// licences, the manual pages, the .deb and the .rpm.
//
//	go run ./packaging/tool icons SRC.png OUTDIR
//	go run ./packaging/tool licenses OUT.txt [COPYRIGHT]
//	go run ./packaging/tool deb CONFIG.yaml OUT.deb
//	go run ./packaging/tool rpm CONFIG.yaml OUT.rpm
//	go run ./packaging/tool zip OUT.zip FOLDER FILE...
//	go run ./packaging/tool manifests DIST VERSION DATE
//	go run ./packaging/tool man OUTDIR FERRY-CLI VERSION DATE
//
// icons writes OUTDIR/hicolor/NxN/apps/<app id>.png for the freedesktop icon
// sizes and OUTDIR/ferry.ico (PNG-compressed entries, Windows Vista and later)
// for the Windows resources and installer.
//
// licenses (run in the repository) writes the licence texts of every module
// the app and ferry-cli link on Linux, Windows and macOS, and of the Go
// runtime, found in the module cache (go list -deps) and named by
// github.com/google/licensecheck, into OUT.txt; COPYRIGHT, if given, gets the
// same as a machine-readable Debian copyright file. A linked module without a
// licence file fails the build.
//
// deb builds a Debian package with nfpm from an nfpm YAML file; ${VAR} in it
// expands from the environment (scripts/package.sh sets VERSION, ARCH, BUILD);
// rpm builds an RPM from the same file, with its rpm: overrides. Unless the
// file names a changelog, both get one entry for the version and release that
// points to its release notes (Debian requires a changelog.Debian.gz).
// Every file time in the package is SOURCE_DATE_EPOCH (required), so the same
// inputs give the same bytes.
//
// zip packs the FILEs into OUT.zip under FOLDER/, stamped with
// SOURCE_DATE_EPOCH (the portable Windows zip).
//
// man writes the manual pages ferry.1.gz and ferry-cli.1.gz into OUTDIR,
// ferry-cli's commands and flags read from the FERRY-CLI binary (a build
// that runs here) with `help` and `help COMMAND`.
//
// manifests writes the winget, Scoop and Homebrew cask manifests for the
// release artefacts in DIST into DIST/manifests, with their SHA-256.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

var errUsage = errors.New("usage: tool icons SRC.png OUTDIR | tool licenses OUT.txt [COPYRIGHT] | tool deb|rpm CONFIG.yaml OUT | tool zip OUT.zip FOLDER FILE... | tool manifests DIST VERSION DATE | tool man OUTDIR FERRY-CLI VERSION DATE")

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "packaging/tool:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) >= 4 && args[0] == "zip" {
		mtime, err := sourceDate()
		if err != nil {
			return err
		}
		return writeZip(args[1], args[2], args[3:], mtime)
	}
	if len(args) == 5 && args[0] == "man" {
		return writeManPages(args[1], args[2], args[3], args[4])
	}
	if len(args) == 4 && args[0] == "manifests" {
		return writeManifests(args[1], args[2], args[3])
	}
	if len(args) == 2 && args[0] == "licenses" {
		return writeLicenses(args[1], "", licensedPackages)
	}
	if len(args) != 3 {
		return errUsage
	}
	switch args[0] {
	case "licenses":
		return writeLicenses(args[1], args[2], licensedPackages)
	case "icons":
		return writeIcons(args[1], args[2])
	case "deb", "rpm":
		mtime, err := sourceDate()
		if err != nil {
			return err
		}
		return writePackage(args[0], args[1], args[2], mtime)
	}
	return errUsage
}

// licensedPackages are the programs Ferry ships: the app and ferry-cli.
var licensedPackages = []string{".", "./cmd/ferry-cli"}

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
