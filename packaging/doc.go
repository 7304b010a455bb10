// Package packaging holds what is platform-specific in Ferry's release
// artefacts, in the folders next to this file:
//
//	linux/    the .deb's and .rpm's nfpm config, the desktop entry, AppStream
//	          metadata, the tarball's Makefile
//	windows/  the NSIS installer, the resource script (icon, version) and manifest
//	macos/    what the .app's Info.plist needs beyond what `fyne package` writes
//	schemas/  winget's and Scoop's published manifest schemas, for the tests
//	wine/     a test-only DLL that lets Go's Windows binaries start under Wine 8
//	tool/     the Go helper scripts/package.sh runs (icons, licences, manual
//	          pages, .deb, .rpm, zip, package-manager manifests)
//
// scripts/package.sh builds the artefacts. This package's tests build them
// the same way and check them: file lists and metadata, licences, an install
// into a temporary root (dpkg, rpm, make), the app drawing its window under
// Xvfb, transfers between the installed or Windows (Wine) binaries and a Linux
// ferry-cli, the installer and its PATH entry under Wine, the manifests
// against their schemas, the workflows with actionlint, and that two builds in
// different folders give identical bytes.
// FERRY_PACKAGE_FULL=1 adds the slow parts (cold cgo builds of the release app
// for Linux and Windows); see README's "Packaging".
package packaging
