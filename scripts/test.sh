#!/usr/bin/env bash
# Runs Ferry's test suite. On Debian/Ubuntu it first installs the system
# packages the suite needs (as root, or through sudo when available).
#
#   scripts/test.sh           the whole suite, as CI runs it
#   scripts/test.sh --quick   the edit-test loop: build, vet and every package's
#                             tests with -short (slow tests skip themselves), no
#                             race detector, fuzzing, govulncheck or packaging
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
case "${1:-}" in
--quick) quick=true ;;
"") ;;
*) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac

# step prints a step's title with the time since the suite began, so that a
# CI log says where its minutes went.
step() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

pkgs=(gcc pkg-config libgl1-mesa-dev xorg-dev xvfb imagemagick xdotool dunst dbus-x11 dbus-daemon util-linux python3 python3-xlib
      avahi-daemon avahi-utils iproute2 iptables iperf3 openssh-server openssh-client rsync
      # packaging checks (go test ./packaging): Windows cross builds, the installer, Wine, .deb and .rpm metadata
      gcc-mingw-w64-x86-64 nsis wine wine64 appstream desktop-file-utils xz-utils rpm python3-debian shellcheck lintian
      curl
      # the browser tests of engine/weblink (skipped without it)
      chromium
      # the FAT stick tests of engine and engine/store (a vfat image through fusefat, as this kernel has
      # no vfat; an exFAT image through exfat-fuse; skipped without them)
      dosfstools fusefat exfatprogs exfat-fuse)
step "system packages (apt, where missing)"
. scripts/apt-ensure.sh
apt_ensure "${pkgs[@]}"
# Node.js for the third-party LocalSend implementation the interop tests run
# (engine/localsend). Only where npm is missing: a Node.js installed from
# elsewhere (NodeSource's nodejs carries its own npm) conflicts with Debian's npm.
command -v npm >/dev/null || apt_ensure nodejs npm
# A LocalSend CLI written by others (npm "localsend", TypeScript), so that a
# misreading of the protocol shared by Ferry and its own test peer shows up;
# its tests skip when it cannot be installed.
if ! command -v localsend >/dev/null; then
  npm install -g --no-audit --no-fund localsend@0.1.2 >/dev/null 2>&1 \
    || echo "(npm could not install the third-party LocalSend CLI: its interop tests will skip)"
fi

step "go build (the first build compiles the GUI toolkit, cgo: minutes on a cold cache)"
go build ./...
step "go vet"
go vet ./...
# GitHub's Windows and macOS jobs test these packages there; vet them for
# those systems here, so a test that only builds on Linux shows up before
# it reaches them. Packages on the GUI toolkit need cgo for those systems
# and are left out (the packaging tests cross-build the app).
for goos in windows darwin; do
    step "go vet, GOOS=$goos"
    cross=$(GOOS=$goos CGO_ENABLED=0 go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' \
        ./cmd/ferry-cli/... ./engine/... ./discovery/... ./internal/... | grep -v ' fyne.io/' | cut -d' ' -f1)
    # shellcheck disable=SC2086 # one package per word
    GOOS=$goos CGO_ENABLED=0 go vet $cross
done
if $quick; then
    step "go test -short (quick: no -race, no fuzz, no govulncheck, no packaging)"
    go test -short -count=1 -timeout 10m $(go list ./... | grep -v /packaging)
    exit
fi
# go_test runs go test with the arguments given; when it fails, it prints
# what failed once more at the end: a CI log is read from its tail, and a
# panic's, a runtime error's or a leak check's dump of every goroutine buries the lines
# that say which test failed and why.
go_test() {
    local log rc=0
    log=$(mktemp)
    go test "$@" 2>&1 | tee "$log" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "== go test $* failed (exit $rc); what failed, again:"
        grep -E -A14 '^(panic: |fatal error: |goroutine leak: |SIGSEGV|SIGBUS|unexpected signal)' "$log" | head -90 || true
        grep -E -A24 '^WARNING: DATA RACE' "$log" | head -60 || true
        grep -E '^ *--- FAIL|^FAIL|^panic: |^fatal error: |race detected during execution' "$log" | head -60 || true
    fi
    rm -f "$log"
    return "$rc"
}
step "go test -race: the engine and discovery"
# -race on the engine and discovery (where the concurrency lives); the rest plain. The engine
# takes 6-7 minutes under -race on two cores, twice that on a busy machine.
go_test -race -count=1 -timeout 30m ./engine/... ./discovery/...
step "go test: the other packages"
go_test -count=1 -timeout 20m $(go list ./... | grep -v -e /engine -e /discovery -e /packaging)
step "fuzz: every target a few seconds (scripts/fuzz.sh; 64 targets, 5-7 minutes)"
scripts/fuzz.sh 4s
step "govulncheck (scripts/vulncheck.sh; skipped with a message where the database cannot be reached)"
scripts/vulncheck.sh
step "packaging: build every artefact with scripts/package.sh, install and run them (about 3-4 min)"
go test -count=1 -timeout 30m ./packaging
step "the whole suite passed"
