"""Readers take explicit keyword options and refuse unknown ones (issue 20).

``tracekit.read(p, stirct=True)`` used to succeed: every reader ended its signature with a
``**_`` catch-all. The registry now checks the options against the reader's signature.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from conftest import sample

import tracekit
from tracekit.errors import UsageError
from tracekit.parsers import READERS, _module, reader_options

#: Readers being rewritten in parallel (issue 20, capture decoding) still end in ``**_``; the
#: registry's check covers them all the same (test_every_reader_refuses_a_misspelt_option).
_CATCH_ALL_PENDING: set[str] = set()


@pytest.mark.parametrize("name", list(READERS))
def test_every_reader_refuses_a_misspelt_option(name: str) -> None:
    """A forced reader with ``stirct=True`` raises UsageError naming it and the valid options."""
    mod = _module(name)
    if mod is None:
        pytest.skip(f"reader {name} not available in this installation")
    valid = reader_options(mod)
    assert {"strict", "limits", "name"} <= valid, valid
    with pytest.raises(UsageError) as err:
        tracekit.read(sample("linux", "bulk_lossy.pcap"), name, stirct=True)
    text = str(err.value)
    assert "'stirct'" in text and name in text
    for option in valid:
        assert option in text, (option, text)


@pytest.mark.parametrize("name", sorted(set(READERS) - _CATCH_ALL_PENDING))
def test_reader_signatures_have_no_catch_all(name: str) -> None:
    """Every option a reader takes is a named keyword parameter."""
    mod = _module(name)
    if mod is None:
        pytest.skip(f"reader {name} not available in this installation")
    kinds = [p.kind for p in inspect.signature(mod.read).parameters.values()]
    assert inspect.Parameter.VAR_KEYWORD not in kinds


def test_sniffed_file_refuses_and_accepts() -> None:
    """The detected reader gets the same check; its real options still work."""
    path = sample("linux", "bulk_lossy.pcap")
    with pytest.raises(UsageError, match="pcap reader: unknown option 'stirct'"):
        tracekit.read(path, stirct=True)
    with pytest.raises(UsageError, match="'mapping'"):
        tracekit.read(path, mapping={"x": "cwnd"})  # an OPNET option, not a capture's
    assert tracekit.read(path, strict=True).packets.height > 0


def test_run_directory(tmp_path: Path) -> None:
    """A directory passes each file the options its reader takes; a name no reader takes fails
    before any file is read, and one no reader of *these* files takes fails too."""
    run = sample("ns2", "lab_reno")
    with pytest.raises(UsageError, match="unknown option 'stirct'"):
        tracekit.read(run, stirct=True)
    with pytest.raises(UsageError, match="readers of the files in .*unknown option 'mapping'"):
        tracekit.read(run, mapping={"x": "cwnd"})  # OPNET's option; lab_reno has no OPNET export
    # ns-2's tcp_header_bytes goes to out.tr's reader only, not to Window.tr's or WindowMon.tr's
    assert tracekit.read(run, strict=True, tcp_header_bytes=20).packets.height > 0
