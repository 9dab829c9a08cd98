"""HTML building blocks every page uses: escaping, table cells that carry their exact value, tables.

Kept apart from :mod:`tracekit.reports.html` (the report page) so that the modules that write parts of
pages (answers, kernel, grading pages) need not import the page module, which imports them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from tracekit import numfmt


def esc(value: Any) -> str:
    """HTML-escape any value (quotes too: it may land in an attribute)."""
    return html.escape(str(value), quote=True)


def cell(value: Any, col: str = "", text: str | None = None) -> str:
    """One table cell: formatted text, its column key in ``data-col``, exact numbers in ``data-v``."""
    shown = esc(text if text is not None else numfmt.cell(value, col))
    attr = f' data-col="{esc(col)}"' if col else ""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float)):
        return f'<td class="t"{attr}>{shown}</td>'
    return f'<td{attr} data-v="{esc(repr(value))}">{shown}</td>'


def table(columns: Sequence[tuple[str, str]], rows: Iterable[dict[str, Any]], *, cls: str = "",
          table_id: str | None = None) -> str:
    """An HTML table of rows (dicts); ``columns`` are (key, header) pairs, keys tracekit's own.

    Each row's cells carry ``data-col`` (the key) so tests and scripts can read values back.
    """
    head = "".join(f'<th class="t">{esc(h)}</th>' if k in ("label", "run", "connection") else f"<th>{esc(h)}</th>"
                   for k, h in columns)
    body = []
    for row in rows:
        cells = "".join(cell(row.get(k), k) for k, _ in columns)
        body.append(f"<tr>{cells}</tr>")
    attrs = (f' class="{esc(cls)}"' if cls else "") + (f' id="{esc(table_id)}"' if table_id else "")
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
