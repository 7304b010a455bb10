// Package packaging holds what is platform-specific in Ferry's release
// artefacts, in the folders next to this file:
//
//	linux/    the .deb's nfpm config, the desktop entry, AppStream metadata
//	windows/  the NSIS installer, the resource script (icon, version) and manifest
//	macos/    what the .app's Info.plist needs beyond what `fyne package` writes
//	wine/     a test-only DLL that lets Go's Windows binaries start under Wine 8
//	tool/     the Go helper scripts/package.sh runs (icons, .deb)
//
// scripts/package.sh builds the artefacts. This package's tests build them
// the same way and check them: file lists and metadata, an install into a
// temporary root, the app drawing its window under Xvfb, transfers between the
// installed or Windows (Wine) binaries and a Linux ferry-cli, the installer under
// Wine, and that two builds in different folders give identical bytes.
// FERRY_PACKAGE_FULL=1 adds the slow parts (cold cgo builds of the release app
// for Linux and Windows); see README's "Packaging".
package packaging
