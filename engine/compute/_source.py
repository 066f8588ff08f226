"""Assembling a kernel program's text: defines, then the portability header, then the kernel
files (read once from the installed ``orrery/kernels`` folder), then inline text."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from typing import Mapping, Sequence

from ..errors import InvalidInputError

HEADER = "portable.h"


@functools.lru_cache(maxsize=None)
def kernel_file(name: str) -> str:
    """The text of one file in ``orrery/kernels``."""
    resource = importlib.resources.files("orrery.kernels") / name
    if not resource.is_file():
        raise InvalidInputError(f"no kernel source {name!r} in orrery/kernels")
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


def assemble(sources: Sequence[str], text: str, defines: Mapping[str, object],
             options: str) -> tuple[str, str]:
    """Return the program text and the hash that identifies it together with ``options``."""
    defines = {"REAL_BITS": 32, **defines}
    lines = [_define_line(name, value) for name, value in sorted(defines.items())]
    parts = ["\n".join(line for line in lines if line), kernel_file(HEADER)]
    parts += [kernel_file(name) for name in sources]
    if text:
        parts.append(text)
    final = "\n".join(parts) + "\n"
    digest = hashlib.sha256((options + "\0" + final).encode()).hexdigest()
    return final, digest
