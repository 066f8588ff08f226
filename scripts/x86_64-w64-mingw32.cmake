# CMake toolchain for Windows x86-64 with Debian's MinGW-w64 cross compiler
# (g++-mingw-w64-x86-64-posix: its std::thread is the POSIX-threads one), as
# scripts/native-warnings.sh uses it to compile the core (ORRERY_CORE_ONLY) for Windows.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
