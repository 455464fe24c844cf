# shellcheck shell=bash
# Sourced by demo.sh, test.sh, compare_torch.sh, speed_tables.sh and .ci/run: installs the Debian 12 packages a build
# needs, only those missing. (test.sh asks for Debian's python3-numpy, python3-torch and python3-pytest too: about
# 60 MB to download and 300 MB installed, for the Python package's tests and the PyTorch parity tests.)
# Needs root or sudo when something is missing; does nothing on a machine without dpkg (other distributions:
# install the equivalents yourself).

pacl_ensure_packages() {
  if ! command -v dpkg-query > /dev/null 2>&1; then
    echo "no dpkg here: not installing packages; make sure these (or their equivalents) are present: $*"
    return 0
  fi
  local missing=() package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "${package}" 2> /dev/null | grep -q "install ok installed"; then
      missing+=("${package}")
    fi
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=()
  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo > /dev/null 2>&1; then
      echo "missing packages (${missing[*]}), and neither root nor sudo to install them" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  echo "installing: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update < /dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" < /dev/null
}
