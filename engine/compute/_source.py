"""Assembling a kernel program's text: defines, then the portability header, then the kernel
files, then inline text.

Kernel files sit beside the Python that launches them, in a ``kernels/`` folder of the
launching package (``engine/solvers/kernels/``, ``app/render/kernels/``, ...), so the caller
names its package and this layer never imports the layers above it. The portability header that
every program opens with is the compute layer's own (``engine/compute/kernels/portable.h``).
Files are read once, from the installed package.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from typing import Mapping, Sequence

from ..errors import InvalidInputError

HEADER = "portable.h"
KERNEL_FOLDER = "kernels"


@functools.lru_cache(maxsize=None)
def kernel_file(package: str, name: str) -> str:
    """The text of ``name`` in the ``kernels/`` folder of the package ``package``."""
    resource = importlib.resources.files(package) / KERNEL_FOLDER / name
    if not resource.is_file():
        raise InvalidInputError(f"no kernel source {name!r} in {package}'s {KERNEL_FOLDER}/ folder")
    return resource.read_text(encoding="utf-8")


def _define_line(name: str, value) -> str:
    if not name.isidentifier():
        raise InvalidInputError(f"kernel define {name!r} is not an identifier")
    if value is None or value is True:
        return f"#define {name}"
    if value is False:
        return ""
    if isinstance(value, float):
        return f"#define {name} {value!r}"
    return f"#define {name} {value}"


def assemble(package: str | None, sources: Sequence[str], text: str,
             defines: Mapping[str, object], options: str) -> tuple[str, str]:
    """Return the program text and the hash that identifies it together with ``options``.
    ``sources`` are file names in ``package``'s ``kernels/`` folder."""
    if sources and package is None:
        raise InvalidInputError(f"kernel sources {list(sources)} need the package whose "
                                f"{KERNEL_FOLDER}/ folder holds them")
    defines = {"REAL_BITS": 32, **defines}
    lines = [_define_line(name, value) for name, value in sorted(defines.items())]
    parts = ["\n".join(line for line in lines if line), kernel_file(__package__, HEADER)]
    parts += [kernel_file(package, name) for name in sources]
    if text:
        parts.append(text)
    final = "\n".join(parts) + "\n"
    digest = hashlib.sha256((options + "\0" + final).encode()).hexdigest()
    return final, digest
