"""gpu-fmm's M2L of one order as straight-line kernel code, generated from the expansion tables
(``native/fmm_expansions.hpp``; docs/adr/0154).

The table-driven loop indexes the derivative tensor and the expansions with values read from
memory, so a GPU compiler keeps them in local memory (the per-thread stack): each M2L of order 4
then moves about 2 KiB there. Written out with every index a constant, the tensor, the local
expansion and the recurrence's intermediates live in registers and the arithmetic is exactly
the table loop's (the same recurrence and contraction, sums in the same order; only the division
by n becomes a product with the constants (2n - 1) / n and (n - 1) / n). The generator also
counts the code's floating-point operations, the numerator of the M2L rate that ``orrery bench
fmm`` sets against the device's FMA ceiling.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ._fmm import expansion_tables


@dataclass(frozen=True)
class M2lCode:
    text: str   # the definition of m2l_accumulate (declared in fmm.cl)
    flops: int  # additions and multiplications of one call (an FMA counts two)


def _literal(value: float) -> str:
    return f"(accum){value!r}"


def _sum(terms: list[str]) -> str:
    return " + ".join(terms)


@functools.lru_cache(maxsize=None)
def m2l_code(order: int) -> M2lCode:
    tb = expansion_tables(order)
    terms = tb["terms"]
    lines = ["DEVICE void m2l_accumulate(const accum rx, const accum ry, const accum rz, const accum eps2,",
             "                            GLOBAL const accum* RESTRICT S, accum* L) {",
             "  const accum inv_r2 = 1 / (rx * rx + ry * ry + rz * rz + eps2);",
             "  const accum u0 = SQRT(inv_r2);"]
    flops = 8  # r^2 + eps^2 (5), the reciprocal and the square root (counted one each)
    axes = ("rx", "ry", "rz")
    for q in range(1, terms):
        n = int(tb["degree"][q])
        first = [f"{axes[i]} * u{tb[f'minus_one_{i}'][q]}" for i in range(3) if tb[f"minus_one_{i}"][q] >= 0]
        second = [f"u{tb[f'minus_two_{i}'][q]}" for i in range(3) if tb[f"minus_two_{i}"][q] >= 0]
        value = f"{_literal((2 * n - 1) / n)} * ({_sum(first)})"
        flops += 2 * len(first)  # the products, their sums and the constant's product
        if second:
            value += f" + {_literal((n - 1) / n)} * ({_sum(second)})"
            flops += len(second) + 1
        lines.append(f"  const accum u{q} = -({value}) * inv_r2;")
        flops += 1
    for q in range(terms):
        scale = float(tb["factorial"][q])
        if scale == 1.0:
            lines.append(f"  const accum d{q} = u{q};")
        else:
            lines.append(f"  const accum d{q} = u{q} * {_literal(scale)};")
            flops += 1
    start, pair_n, pair_sum = tb["pair_start"], tb["pair_n"], tb["pair_sum"]
    for k in range(terms):
        products = [f"d{pair_sum[q]} * S[{pair_n[q]}]" for q in range(start[k], start[k + 1])]
        lines.append(f"  L[{k}] += {_sum(products)};")
        flops += 2 * len(products)
    lines.append("}")
    return M2lCode(text="\n".join(lines) + "\n", flops=flops)
