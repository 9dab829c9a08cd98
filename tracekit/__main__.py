"""``python -m tracekit``: the same entry point as the console script."""

from tracekit.cli.main import run

if __name__ == "__main__":
    run()
