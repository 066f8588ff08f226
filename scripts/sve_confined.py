"""Fails if an SVE kernel file's object code holds SVE instructions in a function that another
file may also define (scripts/arm64.sh runs it on the AArch64 build's simd_sve*.cpp objects).

Those files are compiled with SVE enabled, so the compiler may use SVE in any function it emits
there, the inline functions and templates of shared headers included (std::vector's members, the
core's own), which other files emit too, as weak symbols. The linker keeps one copy of each: had it
kept an SVE file's, a CPU without SVE would fault in code that has nothing to do with SVE. So
every function with SVE instructions must be local to its file: the kernels instantiated on the
types of simd_sve.hpp's unnamed namespace are.

    python scripts/sve_confined.py build/native/CMakeFiles/_native.dir/simd_sve*.cpp.o
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

TOOLS = "aarch64-linux-gnu-"
FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
# An operand only SVE has (a Z register with its element size, a governing predicate, a predicate
# register with its element size) or an instruction only SVE has.
SVE_INSTRUCTION = re.compile(r"\bz\d+\.[bhsdq]\b|\bp\d+/[zm]\b|\bp\d+\.[bhsd]\b"
                             r"|\t(ptrue|ptrues|whilel[eots]|cnt[bhwd]|inc[bhwd]|dec[bhwd]|rdvl|addvl|addpl)\b")


def _run(tool: str, *args: str) -> str:
    return subprocess.run([TOOLS + tool, *args], check=True, capture_output=True, text=True).stdout


def functions_with_sve(obj: str) -> dict[str, int]:
    """Every function of the object file that holds SVE instructions, with how many it holds."""
    found: dict[str, int] = {}
    function = "?"
    for line in _run("objdump", "-d", "--no-show-raw-insn", obj).splitlines():
        header = FUNCTION.match(line)
        if header:
            function = header.group(1)
        elif SVE_INSTRUCTION.search(line):
            found[function] = found.get(function, 0) + 1
    return found


def shared_functions(obj: str) -> set[str]:
    """The functions the object defines as global or weak symbols: ones the linker may merge."""
    shared = set()
    for line in _run("nm", "--defined-only", obj).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TWV":
            shared.add(parts[2])
    return shared


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("objects", nargs="+")
    args = parser.parse_args(argv)
    failed = False
    for obj in args.objects:
        found = functions_with_sve(obj)
        strays = {name: found[name] for name in shared_functions(obj) if name in found}
        print(f"{obj.rsplit('/', 1)[-1]}: {len(found)} functions hold SVE instructions, "
              f"{len(strays)} of them shared with other files")
        for name, count in sorted(strays.items()):
            demangled = _run("c++filt", name).strip()
            print(f"  {count} SVE instructions in {demangled[:200]}")
        failed |= bool(strays) or not found
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
