# CMake toolchain for AArch64 Linux with Debian's cross compiler (g++-aarch64-linux-gnu), as
# scripts/arm64.sh uses it; the Python headers come from its arm64 root.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
