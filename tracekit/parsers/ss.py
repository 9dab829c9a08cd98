"""Logs of repeated ``ss -tin`` (iproute2): the sending kernel's own TCP state over time.

Accepted shapes (docs/formats-kernel.md has examples):

* one block per poll, a ``date +%s.%N`` line before each (``while :; do date +%s.%N; ss -tin;
  sleep 0.01; done``), or every line prefixed by a stamp (``... | ts '%.s'``, moreutils);
* ss's default layout (the socket line, then a tab-indented line of TCP info) or ``-O``
  (``--oneline``: both on one line); ``-e``, ``-m``, ``-p``, ``-o`` fields are skipped;
  a ``Netid`` column (``ss -ain``) and the ``State Recv-Q ...`` header are allowed;
* the info fields in any order, any of them missing (iproute2 prints only what the kernel
  filled in: ``ssthresh`` is left out while it is "infinite", ``unacked``/``retrans``/``lost``
  while zero), rates as ``123bps`` (iproute2 ≥ 5.x) or ``1.2Mbps`` (older releases).

Every poll of a connection becomes ``samples`` rows (units converted: ss prints times in ms):
``cwnd``/``ssthresh`` in packets *and* bytes (× the connection's ``mss:``, tcpi_snd_mss),
``srtt``/``rttvar``/``minrtt``/``rto`` (s), ``bytes_acked``/``bytes_sent``/``bytes_retrans``
(bytes), ``delivery_rate``/``pacing_rate`` (bit/s), ``unacked``/``lost``/``sacked``/``retrans``
(packets: tcpi_unacked, tcpi_lost, tcpi_sacked, tcpi_retrans), ``total_retrans`` (count:
the second number of ``retrans:a/b``, tcpi_total_retrans), ``app_limited`` (1 or 0),
``busy`` (s) and the ``rwnd_limited``/``sndbuf_limited`` shares (ratio). ``node`` is the
connection as ``local:port->peer:port`` (the sender's view), which is how the analysis
matches the rows to a capture's direction (:func:`tracekit.analysis.cwnd._aliases`).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from tracekit._source import Source
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _stamps
from tracekit.parsers._text import head_text, load_text
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ss"
DESCRIPTION = "iproute2 `ss -tin` polled in a loop (date line per block or ts-style prefix): kernel cwnd, RTT, rates"
DETECT = ("a TCP socket line ('ESTAB 0 0 addr:port addr:port', optionally stamped) followed on it or on the "
          "next line by ss -i info holding at least two of rto:, rtt:, mss:, cwnd:")

_STATES = ("ESTAB|SYN-SENT|SYN-RECV|FIN-WAIT-1|FIN-WAIT-2|TIME-WAIT|CLOSE-WAIT|LAST-ACK|LISTEN|CLOSING|CLOSED|"
           "UNCONN|UNKNOWN|NEW-SYN-RECV|BOUND-INACTIVE")
_SOCKET = re.compile(rf"^(?:(?:tcp|mptcp)\s+)?(?P<state>{_STATES})\s+(?P<rq>\d+)\s+(?P<sq>\d+)\s+"
                     r"(?P<local>\S+)\s+(?P<peer>\S+)(?P<rest>.*)$")
_HEADER = re.compile(r"^\s*(?:Netid\s+)?State\s+Recv-Q\s+Send-Q")
_INFO_KEYS = re.compile(r"(?:^|\s)(?:rto|rtt|mss|cwnd):")
_USERS = re.compile(r'users:\(\(.*?\)\)')  # -p: process names may hold spaces
_TOKEN = re.compile(r"\S+:\([^)]*\)\S*|\S+")
_RATE = re.compile(r"^([\d.]+)([KMGT]?)bps$")
_MS = re.compile(r"^([\d.]+)ms(?:\(([\d.]+)%\))?$")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
#: Bare words of ss -i that are flags, not the congestion-control name (iproute2 misc/ss.c tcp_show_info).
_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "<->", "->", "<-", "acc_ecn", "ecn_low"}
#: Keys copied as they are: key -> (metric, scale, unit).
_PLAIN: dict[str, tuple[str, float, str]] = {
    "rto": ("rto", 1e-3, "s"), "minrtt": ("minrtt", 1e-3, "s"), "bytes_acked": ("bytes_acked", 1.0, "bytes"),
    "bytes_sent": ("bytes_sent", 1.0, "bytes"), "bytes_retrans": ("bytes_retrans", 1.0, "bytes"),
    "unacked": ("unacked", 1.0, "packets"), "lost": ("lost", 1.0, "packets"), "sacked": ("sacked", 1.0, "packets"),
}
_RATES = {"delivery_rate": "delivery_rate", "pacing_rate": "pacing_rate"}


def sniff(head: bytes) -> bool:
    """True for ss -i output (see :data:`DETECT`)."""
    lines = head_text(head).splitlines()[:400]
    for i, raw in enumerate(lines):
        _, line = _stamps.split_prefix(raw)
        m = _SOCKET.match(line.strip())
        if m is None:
            continue
        info = m.group("rest")
        if i + 1 < len(lines):
            info += " " + _stamps.split_prefix(lines[i + 1])[1]
        if len(_INFO_KEYS.findall(info)) >= 2:
            return True
    return False


def _endpoint(text: str) -> tuple[str, str]:
    """(address, port) of ``10.0.0.1:80``, ``[fd00::1]:80``, ``[::ffff:10.0.0.1]:80``, ``10.0.0.1%eth0:80``."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]").split("%", 1)[0]
    if host.lower().startswith("::ffff:") and "." in host:
        host = host[7:]  # an IPv4 peer of a dual-stack socket: the capture shows plain IPv4
    return host, port


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _rate(text: str) -> float | None:
    m = _RATE.match(text)
    v = _number(m.group(1)) if m else None
    return v * _SCALE[m.group(2)] if m and v is not None else None


def parse_info(info: str) -> tuple[dict[str, float], str | None]:
    """The numeric fields of one ss -i info text (schema units) and the congestion-control name."""
    out: dict[str, float] = {}
    cc = None
    toks = _TOKEN.findall(_USERS.sub(" ", info))
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok in ("send", *_RATES) and i < len(toks):
            value = _rate(toks[i])
            i += 1
            if value is not None and tok in _RATES:
                out[_RATES[tok]] = value
            continue
        key, sep, val = tok.partition(":")
        if not sep:
            if tok == "app_limited":
                out["app_limited"] = 1.0
            elif cc is None and tok not in _FLAGS and re.fullmatch(r"[a-z][a-z0-9_]*", tok):
                cc = tok
            continue
        _field(out, key, val)
    out.setdefault("app_limited", 0.0)
    return out, cc


def _field(out: dict[str, float], key: str, val: str) -> None:
    """Store one ``key:value`` field of ss -i in ``out`` (unknown keys are skipped)."""
    if key in _PLAIN:
        v = _number(val)
        if v is not None:
            metric, scale, _ = _PLAIN[key]
            out[metric] = v * scale
    elif key in ("cwnd", "ssthresh", "mss"):
        v = _number(val)
        if v is not None:
            out[key] = v
    elif key == "rtt":  # srtt/rttvar in ms (tcpi_rtt/1000, tcpi_rttvar/1000)
        a, _, b = val.partition("/")
        for name, text in (("srtt", a), ("rttvar", b)):
            v = _number(text)
            if v is not None:
                out[name] = v * 1e-3
    elif key == "retrans":  # tcpi_retrans (segments out now) / tcpi_total_retrans
        a, _, b = val.partition("/")
        for name, text in (("retrans", a), ("total_retrans", b)):
            v = _number(text)
            if v is not None:
                out[name] = v
    elif key in ("busy", "rwnd_limited", "sndbuf_limited"):
        m = _MS.match(val)
        ms, pct = (_number(m.group(1)), _number(m.group(2) or "")) if m else (None, None)
        if key == "busy" and ms is not None:
            out["busy"] = ms * 1e-3
        elif key != "busy" and pct is not None:
            out[key] = pct / 100.0


#: metric -> unit of the rows written per poll (cwnd/ssthresh also get a bytes row).
_UNITS = {"cwnd": "packets", "ssthresh": "packets", "srtt": "s", "rttvar": "s", "minrtt": "s", "rto": "s",
          "bytes_acked": "bytes", "bytes_sent": "bytes", "bytes_retrans": "bytes", "delivery_rate": "bps",
          "pacing_rate": "bps", "unacked": "packets", "lost": "packets", "sacked": "packets",
          "retrans": "packets", "total_retrans": "count", "app_limited": "1", "busy": "s",
          "rwnd_limited": "ratio", "sndbuf_limited": "ratio"}


class _Rows:
    """Columns of the samples frame, and what is known about each connection."""

    def __init__(self) -> None:
        self.t: list[int] = []
        self.conn: list[int] = []
        self.metric: list[str] = []
        self.value: list[float] = []
        self.unit: list[str] = []
        self.conns: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, t_ns: int, local: str, peer: str, state: str, info: str) -> None:
        fields, cc = parse_info(info)
        c = self.conns.get((local, peer))
        if c is None:
            c = self.conns[(local, peer)] = {"id": len(self.conns), "local": local, "peer": peer,
                                              "cc": None, "mss": None, "polls": 0}
        c["polls"] += 1
        c["state"] = state
        c["cc"] = cc or c["cc"]
        mss = fields.get("mss") or c["mss"]
        c["mss"] = mss
        c["bytes_sent"] = fields.get("bytes_sent", c.get("bytes_sent"))
        for metric, v in fields.items():
            unit = _UNITS.get(metric)
            if unit is None:
                continue
            self._row(t_ns, c["id"], metric, v, unit)
            if metric in ("cwnd", "ssthresh") and mss:
                self._row(t_ns, c["id"], metric, v * mss, "bytes")

    def _row(self, t_ns: int, conn: int, metric: str, value: float, unit: str) -> None:
        self.t.append(t_ns)
        self.conn.append(conn)
        self.metric.append(metric)
        self.value.append(value)
        self.unit.append(unit)


def _parse(text: str, path: str, log: WarningLog) -> tuple[_Rows, dict[str, Any]]:
    """Walk the log line by line (ss output is small: ~200 bytes a connection and poll)."""
    rows = _Rows()
    block_ns: int | None = None
    pending: tuple[int, str, str, str, int] | None = None  # socket line awaiting its info line
    layout = {"prefix": 0, "alone": 0, "one-line": 0, "two-line": 0}
    bad, first_bad, unstamped, first_unstamped = 0, None, 0, None
    for no, raw in enumerate(text.splitlines(), 1):
        stamp, line = _stamps.split_prefix(raw)
        if stamp is None and (alone := _stamps.alone(raw)) is not None:
            block_ns, pending = alone, None
            layout["alone"] += 1
            continue
        if stamp is not None:
            layout["prefix"] += 1
        if not line.strip() or _HEADER.match(line):
            continue
        t_ns = stamp if stamp is not None else block_ns
        sock = _SOCKET.match(line.strip()) if not line[:1].isspace() else None
        if sock is not None:
            pending = None
            if t_ns is None:
                unstamped += 1
                first_unstamped = first_unstamped or no
                continue
            local, peer = (":".join(_endpoint(sock.group(k))) for k in ("local", "peer"))
            rest = sock.group("rest")
            if _INFO_KEYS.search(rest):
                rows.add(t_ns, local, peer, sock.group("state"), rest)
                layout["one-line"] += 1
            else:
                pending = (t_ns, local, peer, sock.group("state"), no)
            continue
        if line[:1].isspace() and pending is not None:
            rows.add(pending[0], pending[1], pending[2], pending[3], line)
            layout["two-line"] += 1
            pending = None
            continue
        if line[:1].isspace() and t_ns is None:
            continue  # the info line of a socket that had no stamp (counted there)
        bad += 1
        first_bad = first_bad or no
    if bad:
        log.add("W-BADLINE", f"{bad:,} line(s) are neither a stamp, an ss socket line nor its info line",
                count=bad, line=first_bad)
    if unstamped:
        log.add("W-NOSTAMP", f"{unstamped:,} socket line(s) before the first time stamp left out", count=unstamped,
                line=first_unstamped, hint="write `date +%s.%N` before each ss call, or pipe ss through ts '%.s'")
    info = {"stamps": "per line" if layout["prefix"] else "per block",
            "layout": "one-line" if layout["one-line"] >= layout["two-line"] else "two-line"}
    if not rows.conns and (layout["one-line"] + layout["two-line"] + unstamped) == 0:
        raise UnknownFormatError("no ss socket line with TCP info (ss -ti) found", path=path,
                                 hint="record with `ss -tin` (the -i gives the TCP info)")
    if not rows.conns:
        raise CorruptTraceError("no ss poll carries a time stamp", path=path,
                                hint="write `date +%s.%N` before each ss call, or pipe ss through ts '%.s'")
    return rows, info


def read(source: Source, *, limits: Limits = DEFAULT, strict: bool = False, name: str | None = None) -> Trace:
    """Read an ss log.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed).
        limits: Resource limits.
        strict: Turn warnings (lines that are not ss output, polls without a stamp) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        A trace with samples only (times from the first stamp; ``t0_ns`` = that stamp) and
        ``meta["kernel"]``: ``connections`` (flow, local, peer, cc, mss, polls, last state),
        ``congestion_control`` (of the connection that sent the most), the ``layout`` and ``stamps``.

    Raises:
        UnknownFormatError: no ss -i output in the file.
        CorruptTraceError: ss output without any time stamp.
        LimitError: more lines than ``max_lines``.
    """
    text, path, log, compression = load_text(source, limits, name, strict)
    rows, info = _parse(text, path, log)
    t0 = min(rows.t)
    samples = pl.DataFrame({
        "time": (pl.Series(rows.t, dtype=pl.Int64) - t0).cast(pl.Float64) / 1e9,
        "flow": pl.Series(rows.conn, dtype=pl.UInt32),
        "metric": rows.metric, "value": pl.Series(rows.value, dtype=pl.Float64), "unit": rows.unit,
    })
    conns = sorted(rows.conns.values(), key=lambda c: c["id"])
    nodes = pl.Series([f"{c['local']}->{c['peer']}" for c in conns], dtype=pl.String)
    samples = samples.with_columns(node=nodes.gather(pl.Series(rows.conn, dtype=pl.UInt32)),
                                   source=pl.concat_str(pl.lit("ss "), pl.col("metric")))
    top = max(conns, key=lambda c: c.get("bytes_sent") or 0)
    meta = {
        "format": NAME, "tool": "ss (iproute2)", "paths": [path], "compression": compression,
        "t0_ns": t0, "time_origin": "the first time stamp",
        "units": {"rtt": "ms", "rto": "ms", "cwnd": "packets", "rates": "bit/s"},
        "kernel": {
            "congestion_control": top["cc"], **info,
            "connections": [{"flow": c["id"], "local": c["local"], "peer": c["peer"], "cc": c["cc"],
                             "mss": c["mss"], "polls": c["polls"], "state": c["state"]} for c in conns],
        },
        "counts": {"polls": len(set(rows.t)), "connections": len(conns)},
    }
    return make_trace(None, samples, meta, log)
