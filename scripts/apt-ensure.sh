# Sourced by the other scripts: apt_ensure PKG... installs the Debian/Ubuntu
# packages that are missing (as root, or through sudo). Elsewhere it does
# nothing and the build says what is missing.
apt_ensure() {
  command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || return 0
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
