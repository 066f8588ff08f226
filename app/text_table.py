"""The plain text tables Orrery's commands print: ``orrery calibrate``'s timings and accuracy
choices and every benchmark's rows, aligned the same way."""

from __future__ import annotations


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain aligned text table of the given columns (floats to 4 significant digits)."""
    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)
    cells = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
