"""gpu-fmm's expansion operators of one order as straight-line kernel code, generated from the
expansion tables (``native/fmm_expansions.hpp``; docs/fmm-tuning-log.md#0157): the monomials t_n(v) = v^n / n!,
M2M, M2L, L2L and L2P, declared in ``fmm.cl``, and the transposed operators of its VJP, declared
in ``fmm_vjp.cl`` (``vjp_code``).

Table-driven loops index the expansions with values read from memory, so a GPU compiler keeps
the arrays in local memory (the per-thread stack): each M2L of order 4 then moves about 2 KiB
there. Written out with every index a constant, the tensor, the expansions and the
intermediates live in registers, and the arithmetic is the table loops' (the same recurrences
and contractions, sums in the same order; only the M2L recurrence's division by n becomes a
product with the constants (2n - 1) / n and (n - 1) / n). From STREAMED_FROM_ORDER up, M2L
reads the source's terms from memory as its sums take them (the order in which each L_k adds
its products changes, not the products). The generator also counts M2L's
floating-point operations, the numerator of the rate that ``orrery bench fmm`` sets against the
device's FMA ceiling.

The VJP's operators (``fmm_vjp.cl`` says where each runs), with pairs (k, n) of terms with
``|k| + |n| <= p`` and ``s = k + n``:

- ``l2p_vjp``: at one body, the local expansion's cotangent ``Lbar_q += -pbar t_q + sum_a
  abar_a t_{q - e_a}`` (L2P transposed: a P2M of the cotangents) and the body's offset's
  cotangent ``g_c = -pbar f_c + sum_a abar_a H_ac`` (``f`` the L2P's field, ``H`` its
  derivative: the local expansion's second derivatives);
- ``shift_gradient``: ``g_a = sum_pairs Y_s X_k t_{n - e_a}``, the gradient in a shift's offset
  of ``sum Y_s X_k t_n``: L2L's (Y the parent's local expansion, X the child's cotangent) and
  M2M's (Y the parent's multipole cotangent, X the child's multipole);
- ``m2l_gradient``: the gradient in the offset ``R = z_i - z_j`` of node i's M2L term from node
  j (``D_m = d^m (1/r)`` to order p + 1): ``g_a = sum_m W_m D_{m + e_a}(R)``, ``W_m =
  sum_{k+n=m} Lbar_i,k S_j,n``, with S the signed multipole (``(-1)^|n|`` times M); M2L's own
  transpose is M2L itself (``fmm_vjp.cl``);
- ``unsign``: ``S_n -> (-1)^|n| S_n`` (a signed multipole to M, a signed cotangent to M's).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ._fmm import expansion_tables


@dataclass(frozen=True)
class ExpansionCode:
    text: str       # the definitions of the operators fmm.cl declares
    m2l_flops: int  # additions and multiplications of one M2L (an FMA counts two)
    m2l_streamed: bool  # M2L reads the source's terms itself (fmm.cl's M2L_STREAMED)


# From this order up, M2L reads the source's terms as it adds them instead of taking them all
# in registers: the tensor, L and S of order 7 (120 terms each) spilled 1 KiB a work-item and
# the M2L of 10M bodies took 11.6 ms, streamed 544 bytes and 7.8 ms. At orders 5 and 6 the
# terms held are faster (4.6 against 5.5 ms and 6.0 against 6.9 ms at 10M on the H200,
# docs/fmm-tuning-log.md#0184).
STREAMED_FROM_ORDER = 7


def _literal(value: float) -> str:
    return f"(expansion){value!r}"


def _sum(terms: list[str]) -> str:
    return " + ".join(terms)


def _derivatives(tb) -> tuple[list[str], int]:
    """The derivative tensor d0, d1, ... of 1/sqrt(r^2 + eps2) at (rx, ry, rz) for every term of
    the tables ``tb``, by the Taylor recurrence (u_k = D_k / k!), and its operation count."""
    lines = ["  const expansion inv_r2 = 1 / (rx * rx + ry * ry + rz * rz + eps2);",
             "  const expansion u0 = SQRT(inv_r2);"]
    flops = 8  # r^2 + eps^2 (5), the reciprocal and the square root (counted one each)
    axes = ("rx", "ry", "rz")
    for q in range(1, tb["terms"]):
        n = int(tb["degree"][q])
        first = [f"{axes[i]} * u{tb[f'minus_one_{i}'][q]}" for i in range(3) if tb[f"minus_one_{i}"][q] >= 0]
        second = [f"u{tb[f'minus_two_{i}'][q]}" for i in range(3) if tb[f"minus_two_{i}"][q] >= 0]
        if n == 1:  # (2n - 1) / n = 1, and there is no k - 2e_i
            value = _sum(first)
            flops += 2 * len(first) - 1
        else:
            value = f"{_literal((2 * n - 1) / n)} * ({_sum(first)})"
            flops += 2 * len(first)  # the products, their sums and the constant's product
        if second:
            value += f" + {_literal((n - 1) / n)} * ({_sum(second)})"
            flops += len(second) + 1
        lines.append(f"  const expansion u{q} = -({value}) * inv_r2;")
        flops += 1
    for q in range(tb["terms"]):
        scale = float(tb["factorial"][q])
        if scale == 1.0:
            lines.append(f"  const expansion d{q} = u{q};")
        else:
            lines.append(f"  const expansion d{q} = u{q} * {_literal(scale)};")
            flops += 1
    return lines, flops


def _m2l(tb, streamed: bool) -> tuple[list[str], int]:
    terms = tb["terms"]
    source = "GLOBAL const expansion_pack* RESTRICT from" if streamed else "const expansion* S"
    lines = ["DEVICE void m2l_accumulate(const expansion rx, const expansion ry, const expansion rz,",
             f"                            const expansion eps2, {source}, expansion* L) {{"]
    derivatives, flops = _derivatives(tb)
    lines += derivatives
    start, pair_n, pair_sum = tb["pair_start"], tb["pair_n"], tb["pair_sum"]
    if streamed:  # four source terms at a time, each added into every L_k it reaches
        for v in range((terms + 3) // 4):
            lines.append(f"  {{ expansion s[4]; SOURCE_QUAD(from, {v}, s);")
            for k in range(terms):
                for q in range(start[k], start[k + 1]):
                    if pair_n[q] // 4 == v:
                        lines.append(f"    L[{k}] += d{pair_sum[q]} * s[{pair_n[q] - 4 * v}];")
                        flops += 2
            lines.append("  }")
    else:  # each L_k summed over the source's terms, held in registers
        for k in range(terms):
            products = [f"d{pair_sum[q]} * S[{pair_n[q]}]" for q in range(start[k], start[k + 1])]
            lines.append(f"  L[{k}] += {_sum(products)};")
            flops += 2 * len(products)
    lines.append("}")
    return lines, flops


def _monomials(tb) -> list[str]:
    lines = ["DEVICE void monomials(const expansion v0, const expansion v1, const expansion v2, expansion* t) {",
             "  t[0] = 1;"]
    for q in range(1, tb["terms"]):
        scale = float(tb["mono_scale"][q])
        value = f"t[{tb['mono_parent'][q]}] * v{tb['mono_axis'][q]}"
        lines.append(f"  t[{q}] = {value};" if scale == 1.0 else f"  t[{q}] = {value} * {_literal(scale)};")
    return lines + ["}"]


def _shifts(tb) -> list[str]:
    """M2M (a child's multipole C shifted by t into M) and L2L (a parent's local expansion P
    re-expanded by t, added to out), in the table loops' order."""
    start, pair_n, pair_sum = tb["pair_start"], tb["pair_n"], tb["pair_sum"]
    m2m = ["DEVICE void m2m_accumulate(const expansion* t, GLOBAL const expansion* RESTRICT C, expansion* M) {"]
    l2l = ["DEVICE void l2l_accumulate(const expansion* t, GLOBAL const expansion* RESTRICT P,",
           "                            GLOBAL expansion* RESTRICT out) {"]
    for a in range(tb["terms"]):
        pairs = range(start[a], start[a + 1])
        m2m += [f"  M[{pair_sum[q]}] += C[{a}] * t[{pair_n[q]}];" for q in pairs]
        l2l.append(f"  out[{a}] += {_sum([f'P[{pair_sum[q]}] * t[{pair_n[q]}]' for q in pairs])};")
    return m2m + ["}"] + l2l + ["}"]


def _l2p(tb) -> list[str]:
    """The gradient (f[0..2]) and the potential (f[3]) of a local expansion L at monomials t."""
    lines = ["DEVICE void l2p(const expansion* t, GLOBAL const expansion* RESTRICT L, expansion* f) {"]
    for i in range(3):
        plus = tb[f"plus_one_{i}"]
        lines.append(f"  f[{i}] = {_sum([f'L[{plus[k]}] * t[{k}]' for k in range(tb['gradient_terms'])])};")
    lines.append(f"  f[3] = -({_sum([f'L[{k}] * t[{k}]' for k in range(tb['terms'])])});")
    return lines + ["}"]


def expansion_code(order: int) -> ExpansionCode:
    return _expansion_code(order, order >= STREAMED_FROM_ORDER)


@functools.lru_cache(maxsize=None)
def _expansion_code(order: int, streamed: bool) -> ExpansionCode:
    tb = expansion_tables(order)
    m2l, flops = _m2l(tb, streamed)
    lines = _monomials(tb) + _shifts(tb) + m2l + _l2p(tb)
    return ExpansionCode(text="\n".join(lines) + "\n", m2l_flops=flops, m2l_streamed=streamed)


def _l2p_vjp(tb) -> list[str]:
    """L2P's VJP at one body (the module's docstring states it)."""
    terms, gradient = tb["terms"], tb["gradient_terms"]
    hessian = int(expansion_tables(tb["order"] - 1)["gradient_terms"]) if tb["order"] > 1 else 0
    plus = [tb[f"plus_one_{a}"] for a in range(3)]
    minus = [tb[f"minus_one_{a}"] for a in range(3)]
    lines = ["DEVICE void l2p_vjp(const expansion* t, GLOBAL const expansion* RESTRICT L, const expansion ax,",
             "                     const expansion ay, const expansion az, const expansion pbar,",
             "                     expansion* Lbar, expansion* g) {"]
    bars = ("ax", "ay", "az")
    for q in range(terms):
        parts = [f"-pbar * t[{q}]"] + [f"{bars[a]} * t[{minus[a][q]}]" for a in range(3) if minus[a][q] >= 0]
        lines.append(f"  Lbar[{q}] += {_sum(parts)};")
    for c in range(3):
        lines.append(f"  const expansion f{c} = {_sum([f'L[{plus[c][k]}] * t[{k}]' for k in range(gradient)])};")
    for a in range(3):
        for c in range(a, 3):
            parts = [f"L[{plus[a][plus[c][k]]}] * t[{k}]" for k in range(hessian)] or ["(expansion)0"]
            lines.append(f"  const expansion h{a}{c} = {_sum(parts)};")
    for c in range(3):
        h = [f"h{min(a, c)}{max(a, c)}" for a in range(3)]
        lines.append(f"  g[{c}] = -pbar * f{c} + ax * {h[0]} + ay * {h[1]} + az * {h[2]};")
    return lines + ["}"]


def _shift_gradient(tb) -> list[str]:
    start, pair_n, pair_sum = tb["pair_start"], tb["pair_n"], tb["pair_sum"]
    minus = [tb[f"minus_one_{a}"] for a in range(3)]
    lines = ["DEVICE void shift_gradient(const expansion* t, GLOBAL const expansion* RESTRICT Y,",
             "                            const expansion* X, expansion* g) {"]
    for a in range(3):
        rows = []
        for k in range(tb["terms"]):
            parts = [f"Y[{pair_sum[q]}] * t[{minus[a][pair_n[q]]}]" for q in range(start[k], start[k + 1])
                     if minus[a][pair_n[q]] >= 0]
            if parts:
                rows.append(f"X[{k}] * ({_sum(parts)})")
        lines.append(f"  g[{a}] = {_sum(rows)};")
    return lines + ["}"]


def _m2l_gradient(tb) -> list[str]:
    """The gradient in the offset of node i's M2L term from node j (the module's docstring)."""
    wide = expansion_tables(tb["order"] + 1)  # D to order p + 1: its first terms are order p's
    terms, start, pair_n, pair_sum = tb["terms"], tb["pair_start"], tb["pair_n"], tb["pair_sum"]
    lines = ["DEVICE void m2l_gradient(const expansion rx, const expansion ry, const expansion rz,",
             "                          const expansion eps2, const expansion* own_bar,",
             "                          GLOBAL const expansion* RESTRICT source, expansion* g) {"]
    lines += _derivatives(wide)[0]
    products: dict[int, list[str]] = {}
    for k in range(terms):
        for q in range(start[k], start[k + 1]):
            products.setdefault(int(pair_sum[q]), []).append(f"own_bar[{k}] * source[{pair_n[q]}]")
    plus = [wide[f"plus_one_{a}"] for a in range(3)]
    lines += [f"  g[{a}] = 0;" for a in range(3)]
    for m in range(terms):  # each W_m used at once: few of them live
        lines.append(f"  {{ const expansion w = {_sum(products[m])};")
        lines += [f"    g[{a}] += w * d{plus[a][m]};" for a in range(3)]
        lines.append("  }")
    return lines + ["}"]


def _unsign(tb) -> list[str]:
    odd = [q for q in range(tb["terms"]) if tb["degree"][q] % 2]
    return (["DEVICE void unsign(expansion* S) {"] + [f"  S[{q}] = -S[{q}];" for q in odd] + ["}"])


@functools.lru_cache(maxsize=None)
def vjp_code(order: int) -> str:
    """The definitions of the operators ``fmm_vjp.cl`` declares, for expansion order ``order``."""
    tb = expansion_tables(order)
    lines = _l2p_vjp(tb) + _shift_gradient(tb) + _m2l_gradient(tb) + _unsign(tb)
    return "\n".join(lines) + "\n"
