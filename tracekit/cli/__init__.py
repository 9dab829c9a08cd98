"""The ``tracekit`` command line (:mod:`tracekit.cli.main`); nothing else in the package imports it."""
