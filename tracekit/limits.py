"""Resource limits applied to every input (defaults documented in docs/limits.md).

Every limit can be overridden per call (``read(path, limits=Limits(...))``), by
CLI options, or by a ``[limits]`` table in a TOML config file
(``tracekit.toml`` in the working directory, or ``--config FILE``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracekit.errors import UsageError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Limits on what one input may cost.

    Attributes:
        max_input_bytes: Size of the file as stored.
        max_decompressed_bytes: Hard cap on the decompressed size of a compressed input.
        max_ratio: Cap on decompressed/compressed size, enforced past ``ratio_floor_bytes``
            (catches gzip bombs early, whatever their absolute size).
        ratio_floor_bytes: Output size below which the ratio is not checked.
        max_caplen: Largest captured length of one packet (libpcap's 262144).
        max_block_bytes: Largest pcapng block (libpcap's 16 MiB).
        max_packets: Packet records per file.
        max_flows: Distinct connections per file.
        max_line_bytes: Longest line in a text trace.
        max_lines: Lines per text trace.
        timeout_s: Wall-clock time per file in batch/grade.
        max_memory_bytes: Address space per worker in batch/grade.
        max_archive_members: Members of one submission archive.
        max_archive_bytes: Uncompressed bytes of one submission archive.
        max_frag_datagrams: IP datagrams awaiting reassembly at once (captures).
        max_frag_bytes: Fragment data bytes awaiting reassembly at once (Linux's ipfrag_high_thresh).
        frag_timeout_s: Capture seconds a datagram may wait for its fragments (Linux's ipfrag_time).
    """

    max_input_bytes: int = 4 * GiB
    max_decompressed_bytes: int = 2 * GiB
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 32 * MiB
    max_caplen: int = 262144
    max_block_bytes: int = 16 * MiB
    max_packets: int = 50_000_000
    max_flows: int = 100_000
    max_line_bytes: int = 64 * KiB
    max_lines: int = 100_000_000
    timeout_s: float = 300.0
    max_memory_bytes: int = 4 * GiB
    max_archive_members: int = 10_000
    max_archive_bytes: int = 2 * GiB
    max_frag_datagrams: int = 4096
    max_frag_bytes: int = 4 * MiB
    frag_timeout_s: float = 30.0

    def replace(self, **changes: Any) -> Limits:
        """Return a copy with some limits changed (unknown names are a UsageError)."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - names
        if unknown:
            raise UsageError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(names)}")
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_toml(cls, path: str | Path) -> Limits:
        """Read the ``[limits]`` table of a TOML config file.

        Raises:
            UsageError: if the file is not valid TOML or names an unknown limit.
        """
        import tomllib  # (only when a config is read: ~5 ms of every command otherwise)

        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"cannot read config: {exc}", path=str(path)) from None
        table = data.get("limits", {})
        if not isinstance(table, dict):
            raise UsageError("[limits] must be a table", path=str(path))
        return cls().replace(**table)


DEFAULT = Limits()
