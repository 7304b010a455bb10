#!/usr/bin/env bash
# package.sh: builds Ferry's release artefacts into dist/ with a SHA256SUMS file.
#
#   scripts/package.sh                  # everything this machine can build
#   scripts/package.sh cli deb          # only these targets
#   DIST=/tmp/out scripts/package.sh    # into another folder
#
# Targets:
#   cli      ferry-cli for linux, windows and darwin x amd64, arm64 (pure Go);
#            CLI_TARGETS="linux/amd64 windows/amd64" narrows the list
#   deb      ferry_VERSION-1_amd64.deb: app, CLI, desktop entry, icons, AppStream,
#            manual pages, Debian copyright file and third-party licences
#   rpm      ferry-VERSION-1.x86_64.rpm: the same with Fedora's dependency names
#   tarball  Ferry-VERSION-linux-amd64.tar.xz: app, CLI, desktop entry, icons,
#            AppStream, manual pages, licences and a Makefile (install, user-install)
#   windows  the GUI .exe (mingw-w64, icon and version resources), the per-user
#            NSIS installer Ferry-VERSION-windows-amd64-setup.exe (puts
#            ferry-cli.exe on the user's PATH) and Ferry-VERSION-windows-amd64-portable.zip
#   macos    Ferry.app via `fyne package -os darwin` in Ferry-VERSION-macos-ARCH.dmg
#            (only on macOS)
#   manifests  winget, Scoop, Homebrew cask and Flatpak manifests into DIST/manifests,
#            with the checksums of the installer, zip, DMGs and tarball found in
#            DIST (a release job runs it once every artefact is there)
#   all      every target above that this OS can build (the default)
#
# Every artefact carries LICENSE (Apache-2.0) and THIRD_PARTY_LICENSES, the
# licences of every linked Go module, collected at build time by
# `go run ./packaging/tool licenses`.
#
# Release builds are reproducible: -trimpath, no build ID, no VCS stamp from
# the go command, version/commit/date stamped with -X from the last commit,
# SOURCE_DATE_EPOCH (the last commit's time) on every file in the archives.
# Outside a git checkout set FERRY_COMMIT and SOURCE_DATE_EPOCH yourself.
#
# Environment:
#   DIST               output folder (default: ./dist)
#   FERRY_COMMIT       commit to stamp (default: git rev-parse --short=12 HEAD, "-dirty" if modified;
#                      then the build fails if HEAD or a tracked file changes while it runs)
#   SOURCE_DATE_EPOCH  build time stamp (default: the last commit's time)
#   FERRY_LINUX_APP    use this prebuilt linux/amd64 app binary for deb and tarball
#                      (a PIE, as the release app is: go build -buildmode=pie)
#   FERRY_WINDOWS_APP  use this prebuilt ferry.exe in the installer
#                      (both for the packaging tests: they skip cold cgo builds)
#   FERRY_BUILD_FLAGS  more go build flags for the release builds (e.g. -a)
#   SIGN_PFX, SIGN_PASS  Authenticode-sign the Windows .exe files with osslsigncode
#   MACOS_SIGN_IDENTITY  codesign Ferry.app with this Developer ID (hardened runtime)
#
# Needs: Go; for deb, rpm, tarball: gcc and the Fyne build packages; for
# windows: gcc-mingw-w64-x86-64, nsis. On Debian and Ubuntu it installs what is
# missing itself (scripts/apt-ensure.sh, as root or through sudo); elsewhere it
# says what is missing. Checked by `go test ./packaging`.
set -euo pipefail
export LC_ALL=C # one sort order and date format everywhere

# setup works out what to build and how, from FyneApp.toml, git and the
# environment; its variables are the script's globals.
setup() {
	cd "$(dirname "$0")/.."
	root=$PWD
	dist=${DIST:-$root/dist}
	mkdir -p "$dist"
	dist=$(cd "$dist" && pwd)

	# ---- what we are building ----
	version=$(sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)
	[[ -n "$version" ]] || { echo "package.sh: no Version in FyneApp.toml" >&2; exit 1; }
	if [[ -z "${FERRY_COMMIT:-}" || -z "${SOURCE_DATE_EPOCH:-}" ]]; then
		git rev-parse --git-dir >/dev/null 2>&1 || {
			echo "package.sh: not a git checkout: set FERRY_COMMIT and SOURCE_DATE_EPOCH" >&2
			exit 1
		}
	fi
	if [[ -z "${FERRY_COMMIT:-}" ]]; then
		FERRY_COMMIT=$(git rev-parse --short=12 HEAD)
		[[ -z "$(git status --porcelain --untracked-files=no)" ]] || FERRY_COMMIT+=-dirty
		# What the stamp describes; main checks it again at the end.
		stamped_tree=$(tree_state)
	fi
	export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
	date_iso=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
		date -u -r "$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ) # GNU, BSD/macOS
	date_day=${date_iso%%T*}

	pkg=github.com/ferrydrop/ferry/internal/version
	ldflags="-s -w -buildid= -X $pkg.Version=$version -X $pkg.Commit=$FERRY_COMMIT -X $pkg.Date=$date_iso"
	# -buildvcs=false: the stamps above say the same, and a copy of the tree
	# without .git then builds the same bytes.
	read -r -a extra_flags <<<"${FERRY_BUILD_FLAGS:-}"
	# (The ${a[@]+...} form: macOS's bash 3.2 calls an empty array unset.)
	gobuild=(go build -trimpath -buildvcs=false ${extra_flags[@]+"${extra_flags[@]}"})
	# FyneApp.toml's [Migrations] fyneDo = true: what `fyne build` would add.
	guitags=migrated_fynedo

	work=$(mktemp -d)
	trap 'rm -rf "$work"; [[ -z "${syso_in_tree:-}" ]] || rm -f "$syso_in_tree"' EXIT

	os=$(go env GOHOSTOS)
	targets=("$@")
	[[ ${#targets[@]} -gt 0 ]] || targets=(all)
	if [[ " ${targets[*]} " == *" all "* ]]; then
		case $os in
		linux) targets=(cli deb rpm tarball windows) ;;
		darwin) targets=(cli macos) ;;
		*) targets=(cli) ;;
		esac
	fi
	echo "== Ferry $version (commit $FERRY_COMMIT, $date_iso) -> $dist: ${targets[*]}"
	ensure_tools
}

# ensure_tools installs the Debian packages the chosen targets need, as
# scripts/test.sh does, so a fresh machine can run this script first.
ensure_tools() {
	[[ $os == linux ]] || return 0
	local pkgs=() t
	for t in "${targets[@]}"; do
		case $t in
		deb | rpm | tarball) pkgs+=(gcc pkg-config libgl1-mesa-dev xorg-dev xz-utils) ;;
		windows) pkgs+=(gcc-mingw-w64-x86-64 nsis) ;;
		esac
	done
	[[ ${#pkgs[@]} -gt 0 ]] || return 0
	. "$root/scripts/apt-ensure.sh"
	apt_ensure "${pkgs[@]}"
}

log() { echo "-- $*"; }

# tree_state identifies the commit and the changes to tracked files (what
# the stamp's commit and -dirty describe): it differs once either changes.
tree_state() {
	{ git rev-parse HEAD && git diff HEAD --no-ext-diff --binary; } | git hash-object --stdin
}

# check_tree fails the build when the tree changed while it ran (a commit, a
# pull, an edit to a tracked file): the artefacts are stamped with the state
# at the start, and a build takes long enough that the change may be in
# some of them.
check_tree() {
	[[ -n "${stamped_tree:-}" ]] || return 0 # FERRY_COMMIT was given
	[[ "$(tree_state)" != "$stamped_tree" ]] || return 0
	echo "package.sh: the tree changed during the build (a commit or an edit to a tracked file since it started):" >&2
	echo "package.sh: the artefacts in $dist are stamped $FERRY_COMMIT but may hold the change; build again" >&2
	exit 1
}

# ---- pieces shared by several targets ----

# linux_bins builds the linux/amd64 app and CLI into $work/linux once.
#
# The app is a position-independent executable (-buildmode=pie), as Debian
# and Fedora expect a program to be (lintian: hardening-no-pie): the loader
# places its code at random too, not only its libraries. The cgo toolchain
# links it so (gcc -pie). ferry-cli stays a static non-PIE executable on
# purpose (packaging/linux/lintian-overrides): a pure-Go PIE asks for the
# system's dynamic loader (/lib64/ld-linux-x86-64.so.2), and the CLI is one
# file that runs on any Linux, glibc's or not. The checks:
# packaging/pie_test.go.
linux_bins() {
	[[ -e "$work/linux/ferry" ]] && return 0
	mkdir -p "$work/linux"
	if [[ -n "${FERRY_LINUX_APP:-}" ]]; then
		log "linux/amd64 app: using $FERRY_LINUX_APP"
		# ELF e_type (2 bytes at 16, little-endian) 3 is ET_DYN: a PIE.
		if [[ "$(od -An -tx1 -j16 -N2 "$FERRY_LINUX_APP" | tr -d ' \n')" != 0300 ]]; then
			echo "package.sh: FERRY_LINUX_APP $FERRY_LINUX_APP is not a PIE: build it with go build -buildmode=pie, as the release app is" >&2
			exit 1
		fi
		cp "$FERRY_LINUX_APP" "$work/linux/ferry"
	else
		log "linux/amd64 app (cgo; minutes on a cold build cache)"
		CGO_ENABLED=1 GOOS=linux GOARCH=amd64 "${gobuild[@]}" -buildmode=pie -tags "$guitags" -ldflags "$ldflags" -o "$work/linux/ferry" .
	fi
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "${gobuild[@]}" -ldflags "$ldflags" -o "$work/linux/ferry-cli" ./cmd/ferry-cli
}

# legal writes LICENSE, THIRD_PARTY_LICENSES (the licences of every module
# the programs link, on every OS) and Debian's copyright file into
# $work/legal once.
legal() {
	[[ -e "$work/legal/THIRD_PARTY_LICENSES" ]] && return 0
	mkdir -p "$work/legal"
	log "third-party licences (go list -deps, licensecheck)"
	go run ./packaging/tool licenses "$work/legal/THIRD_PARTY_LICENSES" "$work/legal/copyright"
	cp LICENSE "$work/legal/LICENSE"
}

# icons renders the icon sizes and the .ico into $work/icons once.
icons() {
	[[ -e "$work/icons/ferry.ico" ]] && return 0
	go run ./packaging/tool icons assets/icon.png "$work/icons"
}

# sign FILE: Authenticode signature when a certificate is configured.
sign() {
	[[ -n "${SIGN_PFX:-}" ]] || return 0
	log "signing $(basename "$1")"
	osslsigncode sign -pkcs12 "$SIGN_PFX" -pass "${SIGN_PASS:-}" -n "Ferry" \
		-i https://github.com/ferrydrop/ferry -t http://timestamp.digicert.com \
		-in "$1" -out "$1.signed"
	mv "$1.signed" "$1"
}

# ---- targets ----

build_cli() {
	local t goos goarch ext out
	for t in ${CLI_TARGETS:-linux/amd64 linux/arm64 windows/amd64 windows/arm64 darwin/amd64 darwin/arm64}; do
		goos=${t%/*} goarch=${t#*/} ext=""
		[[ $goos == windows ]] && ext=.exe
		out="$dist/ferry-cli-$version-$goos-$goarch$ext"
		log "ferry-cli $goos/$goarch"
		if [[ $goos == windows && $goarch == amd64 ]]; then
			icons
			winres "$work/cli-res" ferry-cli "Ferry command-line client"
			with_syso "$work/cli-res/rsrc.syso" "$root/cmd/ferry-cli" \
				env CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" "${gobuild[@]}" -ldflags "$ldflags" -o "$out" ./cmd/ferry-cli
			sign "$out"
		else
			CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" "${gobuild[@]}" -ldflags "$ldflags" -o "$out" ./cmd/ferry-cli
		fi
	done
}

# winres DIR NAME DESCRIPTION: compiles packaging/windows/ferry.rc.in for
# NAME.exe into DIR/rsrc.syso (windows/amd64 only: Debian's mingw-w64
# windres writes no arm64 objects).
winres() {
	local dir=$1 name=$2 desc=$3 v4=$version.0
	mkdir -p "$dir"
	sed -e "s|@VERSION@|$version|g" -e "s|@VERSION_COMMAS@|${v4//./,}|g" \
		-e "s|@COMMIT@|$FERRY_COMMIT|g" -e "s|@NAME@|$name|g" -e "s|@DESCRIPTION@|$desc|g" \
		-e "s|@YEAR@|${date_day%%-*}|g" \
		packaging/windows/ferry.rc.in >"$dir/ferry.rc"
	cp "$work/icons/ferry.ico" packaging/windows/ferry.manifest "$dir/"
	x86_64-w64-mingw32-windres --target=pe-x86-64 -i "$dir/ferry.rc" -O coff -o "$dir/rsrc.syso"
}

# with_syso SYSO PKGDIR COMMAND...: runs COMMAND (a go build) with SYSO in the
# package folder, where the Go linker looks for it (go build -overlay does not
# cover .syso files), and removes it afterwards. *.syso is git-ignored.
syso_in_tree=""
with_syso() {
	local syso=$1 pkgdir=$2
	shift 2
	syso_in_tree=$pkgdir/zz_package_windows_amd64.syso
	cp "$syso" "$syso_in_tree"
	local rc=0
	"$@" || rc=$?
	rm -f "$syso_in_tree"
	syso_in_tree=""
	return $rc
}

# linux_tree puts what the .deb, the .rpm and the tarball share into
# $work/linux: binaries, icons, filled-in AppStream file, licences, manual pages.
linux_tree() {
	[[ -e "$work/linux/THIRD_PARTY_LICENSES" ]] && return 0
	linux_bins
	icons
	legal
	sed -e "s|@VERSION@|$version|g" -e "s|@DATE@|$date_day|g" \
		packaging/linux/io.ferrydrop.ferry.metainfo.xml.in >"$work/linux/io.ferrydrop.ferry.metainfo.xml"
	cp -r "$work/icons" "$work/linux/icons"
	cp "$work/legal/THIRD_PARTY_LICENSES" "$work/legal/copyright" "$work/linux/"
	# ferry.1 and ferry-cli.1, the CLI's commands and flags as a ferry-cli
	# built for this machine lists them (help, help COMMAND).
	CGO_ENABLED=0 go build -o "$work/host-cli" ./cmd/ferry-cli
	go run ./packaging/tool man "$work/linux/man" "$work/host-cli" "$version" "$date_day"
}

build_deb() {
	linux_tree
	log "ferry_${version}-1_amd64.deb"
	VERSION=$version ARCH=amd64 BUILD=$work/linux go run ./packaging/tool deb packaging/linux/nfpm.yaml "$dist/ferry_${version}-1_amd64.deb"
}

build_rpm() {
	linux_tree
	log "ferry-${version}-1.x86_64.rpm"
	# nfpm maps ARCH=amd64 to RPM's x86_64.
	VERSION=$version ARCH=amd64 BUILD=$work/linux go run ./packaging/tool rpm packaging/linux/nfpm.yaml "$dist/ferry-${version}-1.x86_64.rpm"
}

build_tarball() {
	linux_tree
	local t=$work/tarball/ferry out="$dist/Ferry-$version-linux-amd64.tar.xz"
	log "$(basename "$out")"
	# The layout `fyne package -os linux` made (ferry/Makefile,
	# ferry/usr/local/...), with the CLI, all icon sizes, the AppStream file and
	# the licences added, and our own Makefile that installs all of them.
	rm -rf "$work/tarball"
	mkdir -p "$t/usr/local/bin" "$t/usr/local/share/applications" "$t/usr/local/share/pixmaps" \
		"$t/usr/local/share/metainfo" "$t/usr/local/share/doc/ferry"
	install -m 755 "$work/linux/ferry" "$work/linux/ferry-cli" "$t/usr/local/bin/"
	install -m 644 packaging/linux/io.ferrydrop.ferry.desktop "$t/usr/local/share/applications/"
	install -m 644 "$work/icons/hicolor/256x256/apps/io.ferrydrop.ferry.png" "$t/usr/local/share/pixmaps/"
	mkdir -p "$t/usr/local/share/icons"
	cp -r "$work/icons/hicolor" "$t/usr/local/share/icons/"
	install -m 644 "$work/linux/io.ferrydrop.ferry.metainfo.xml" "$t/usr/local/share/metainfo/"
	install -D -m 644 -t "$t/usr/local/share/man/man1" "$work/linux/man/ferry.1.gz" "$work/linux/man/ferry-cli.1.gz"
	install -m 644 LICENSE "$work/legal/THIRD_PARTY_LICENSES" "$t/usr/local/share/doc/ferry/"
	install -m 644 LICENSE packaging/linux/Makefile "$t/"
	find "$t" -type d -exec chmod 755 {} +
	find "$t/usr/local/share" -type f -exec chmod 644 {} +
	# Name order, the commit's time, root as owner: the same bytes every build.
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		-C "$work/tarball" -cf - ferry | xz -T1 >"$out" # level: XZ_OPT, else 6
}

build_windows() {
	icons
	local d=$work/windows
	mkdir -p "$d"
	if [[ -n "${FERRY_WINDOWS_APP:-}" ]]; then
		log "windows/amd64 app: using $FERRY_WINDOWS_APP"
		cp "$FERRY_WINDOWS_APP" "$d/ferry.exe"
	else
		log "windows/amd64 app (cgo with mingw-w64; ~8 minutes on a cold build cache)"
		winres "$d/res" ferry "Ferry"
		with_syso "$d/res/rsrc.syso" "$root" \
			env CC=x86_64-w64-mingw32-gcc CGO_ENABLED=1 GOOS=windows GOARCH=amd64 "${gobuild[@]}" -tags "$guitags" \
			-ldflags "$ldflags -H windowsgui" -o "$d/ferry.exe" .
		sign "$d/ferry.exe"
	fi
	cp "$d/ferry.exe" "$dist/Ferry-$version-windows-amd64.exe"
	local cli="$dist/ferry-cli-$version-windows-amd64.exe"
	if [[ ! -e "$cli" ]]; then
		CLI_TARGETS=windows/amd64 build_cli
	fi
	cp "$cli" "$d/ferry-cli.exe"
	legal
	# Windows names: .txt so that a double click opens them.
	cp "$work/legal/LICENSE" "$d/LICENSE.txt"
	cp "$work/legal/THIRD_PARTY_LICENSES" "$d/THIRD_PARTY_LICENSES.txt"
	log "Ferry-$version-windows-amd64-portable.zip"
	go run ./packaging/tool zip "$dist/Ferry-$version-windows-amd64-portable.zip" "Ferry-$version" \
		"$d/ferry.exe" "$d/ferry-cli.exe" "$d/LICENSE.txt" "$d/THIRD_PARTY_LICENSES.txt"
	log "Ferry-$version-windows-amd64-setup.exe (NSIS)"
	cp "$work/icons/ferry.ico" "$d/"
	makensis -V2 -INPUTCHARSET UTF8 -DVERSION="$version" -DVERSION4="$version.0" -DSRC="$d" \
		-DOUTFILE="$dist/Ferry-$version-windows-amd64-setup.exe" packaging/windows/ferry.nsi
	sign "$dist/Ferry-$version-windows-amd64-setup.exe"
}

build_macos() {
	if [[ $os != darwin ]]; then
		echo "package.sh: macos: the .app needs macOS (its SDK); see .github/workflows/macos.yml" >&2
		return 1
	fi
	# .github/workflows/macos.yml runs this on a macOS runner and notarizes.
	local d=$work/macos arch
	arch=$(go env GOARCH)
	mkdir -p "$d"
	legal
	CGO_ENABLED=1 "${gobuild[@]}" -tags "$guitags" -ldflags "$ldflags" -o "$d/ferry" .
	(cd "$d" && cp "$root/FyneApp.toml" . && mkdir -p assets && cp "$root/assets/icon.png" assets/ &&
		printf 'package main\n\nfunc main() {}\n' >main.go &&
		go run fyne.io/tools/cmd/fyne@v1.7.4 package -os darwin --release --executable "$d/ferry" \
			--app-version "$version" >/dev/null)
	# fyne's Info.plist lacks what macOS 15 needs for local-network discovery,
	# names a minimum macOS older than Go supports, and an empty category.
	local plist=$d/Ferry.app/Contents/Info.plist
	/usr/libexec/PlistBuddy -c "Merge $root/packaging/macos/Info.extra.plist" "$plist"
	/usr/libexec/PlistBuddy -c "Set :LSMinimumSystemVersion 12.0" "$plist"
	# `fyne package` takes no category (only `fyne release` does) and writes
	# "public.app-category." with nothing after it.
	/usr/libexec/PlistBuddy -c "Set :LSApplicationCategoryType public.app-category.utilities" "$plist"
	plutil -lint "$plist"
	cp "$work/legal/LICENSE" "$work/legal/THIRD_PARTY_LICENSES" "$d/Ferry.app/Contents/Resources/"
	if [[ -n "${MACOS_SIGN_IDENTITY:-}" ]]; then
		# Hardened runtime and a secure timestamp: what notarization requires.
		codesign --force --options runtime --timestamp --sign "$MACOS_SIGN_IDENTITY" "$d/Ferry.app"
		codesign --verify --strict --verbose=2 "$d/Ferry.app"
	fi
	rm -rf "$dist/Ferry.app"
	cp -R "$d/Ferry.app" "$dist/Ferry.app"
	# The DMG: the app, a link to /Applications to drag it onto, the licences.
	local img=$d/dmg
	mkdir -p "$img"
	cp -R "$d/Ferry.app" "$img/"
	ln -s /Applications "$img/Applications"
	cp "$work/legal/LICENSE" "$work/legal/THIRD_PARTY_LICENSES" "$img/"
	rm -f "$dist/Ferry-$version-macos-$arch.dmg"
	hdiutil create -volname "Ferry $version" -srcfolder "$img" -fs HFS+ -format UDZO -ov \
		"$dist/Ferry-$version-macos-$arch.dmg" >/dev/null
	if [[ -n "${MACOS_SIGN_IDENTITY:-}" ]]; then
		codesign --force --timestamp --sign "$MACOS_SIGN_IDENTITY" "$dist/Ferry-$version-macos-$arch.dmg"
	fi
}

# sign_macos_cli: the darwin CLIs get a Developer ID signature with the
# hardened runtime when an identity is configured (notarization needs both).
sign_macos_cli() {
	[[ $os == darwin && -n "${MACOS_SIGN_IDENTITY:-}" ]] || return 0
	local f
	for f in "$dist"/ferry-cli-"$version"-darwin-*; do
		[[ -e $f ]] || continue
		log "signing $(basename "$f")"
		codesign --force --options runtime --timestamp --sign "$MACOS_SIGN_IDENTITY" "$f"
		codesign --verify --strict --verbose=2 "$f"
	done
}

# build_manifests writes the package-manager manifests for the artefacts in
# $dist, with their SHA-256 and their release download URLs.
build_manifests() {
	log "manifests (winget, Scoop, Homebrew cask) -> $dist/manifests"
	go run ./packaging/tool manifests "$dist" "$version" "$date_day"
}

main() {
	setup "$@"
	for t in "${targets[@]}"; do
		case $t in
		cli)
			build_cli
			sign_macos_cli
			;;
		deb) build_deb ;;
		rpm) build_rpm ;;
		tarball) build_tarball ;;
		windows) build_windows ;;
		macos) build_macos ;;
		manifests) build_manifests ;;
		*)
			echo "package.sh: unknown target $t (cli, deb, rpm, tarball, windows, macos, manifests, all)" >&2
			exit 2
			;;
		esac
	done

	check_tree
	sha256() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }
	(
		cd "$dist"
		files=()
		for f in *; do [[ -f $f && $f != SHA256SUMS ]] && files+=("$f"); done
		if [[ ${#files[@]} -gt 0 ]]; then sha256 "${files[@]}" >SHA256SUMS; fi
	)
	echo "== $dist"
	(cd "$dist" && ls -l)
}

# One line that runs everything: bash reads a script as it goes, and this way
# it has read all of it before it starts, so editing (or pulling) this file
# during a long build cannot break the build.
main "$@"; exit $?
