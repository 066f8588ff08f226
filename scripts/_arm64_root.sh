# Sourced by scripts/arm64.sh and scripts/arm64-wheel.sh, from the checkout with scripts/_env.sh
# sourced: the host's cross compiler and qemu (apt), an arm64 root of Debian's Python 3.11 (its
# .deb files unpacked, nothing installed), the aarch64 wheels of the engine's dependencies and
# pytest (pip --platform, into a folder), and what runs that Python: python_on CPU ARGS... under
# qemu-aarch64 -cpu CPU, and $wrapper (qemu's default CPU) for CMake's FindPython.
# cross_cmake_args are the CMake arguments that build the module for that Python.
# ORRERY_ARM64_CACHE holds the root and the wheels (default ~/.cache/orrery/arm64).
cache=${ORRERY_ARM64_CACHE:-$HOME/.cache/orrery/arm64}
root=$cache/root
site=$cache/site
mkdir -p "$cache"

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
host_packages=(g++-aarch64-linux-gnu qemu-user-static)
missing=()
for package in "${host_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
lists_stale=no
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  phase "Debian's arm64 packages made visible to apt (dpkg --add-architecture arm64)"
  $sudo_cmd dpkg --add-architecture arm64
  lists_stale=yes
fi
if [ ${#missing[@]} -gt 0 ] || [ $lists_stale = yes ]; then
  phase "host packages (apt): ${missing[*]:-none, the package lists only}"
  $sudo_cmd apt-get update -qq
  [ ${#missing[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's arm64 Python and the libraries it and the module load (apt-cache depends of
# python3.11-minimal, libpython3.11-stdlib and libpython3.11-dev, less the tools).
root_packages=(libc6 libgcc-s1 libstdc++6 gcc-12-base python3.11-minimal libpython3.11-minimal
               libpython3.11-stdlib libpython3.11-dev libexpat1 zlib1g libffi8 libssl3 libbz2-1.0
               liblzma5 libsqlite3-0 libncursesw6 libtinfo6 libreadline8 libuuid1 libdb5.3
               libcrypt1 libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
               libkrb5support0 libkeyutils1 libcom-err2 libzstd1)
if [ ! -x "$root/usr/bin/python3.11" ]; then
  phase "the arm64 root (apt-get download, dpkg -x): ${#root_packages[@]} packages"
  mkdir -p "$cache/debs" "$root"
  (cd "$cache/debs" && apt-get download -qq "${root_packages[@]/%/:arm64}" 2>/dev/null)
  for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$root"; done
fi
python_on() {  # python_on CPU ARGS...: the arm64 Python on that emulated CPU
  local cpu=$1
  shift
  qemu-aarch64-static -cpu "$cpu" -L "$root" "$root/usr/bin/python3.11" "$@"
}
python_arm64=(qemu-aarch64-static -L "$root" "$root/usr/bin/python3.11")
# The engine's dependencies (pyproject.toml's, less the viewer's) and pytest, as aarch64 wheels.
site_packages=(numpy scipy h5py tqdm pytest)
if [ ! -f "$site/.complete" ]; then
  phase "aarch64 wheels into $site (pip --platform): ${site_packages[*]}"
  python -m pip install -q --platform manylinux2014_aarch64 --python-version 3.11 \
    --implementation cp --abi cp311 --only-binary=:all: --target "$site" "${site_packages[@]}"
  touch "$site/.complete"
fi

# A wrapper that runs the arm64 Python under qemu, so that CMake's FindPython asks it for its
# version and extension suffix.
wrapper=$cache/python3-aarch64
printf '#!/bin/sh\nexec %s "$@"\n' "${python_arm64[*]}" >"$wrapper"
chmod +x "$wrapper"
cross_cmake_args=(-DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/aarch64-linux-gnu.cmake" -DPython_EXECUTABLE="$wrapper"
                  -DPython_INCLUDE_DIR="$root/usr/include/python3.11"
                  -DCMAKE_CXX_FLAGS="-isystem $root/usr/include")
