# Both targets set up .venv themselves (idempotently), so they work on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_SAMPLE ?= samples/linux/bulk_lossy.pcap

.PHONY: demo test venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

RUST_SOURCES := Cargo.toml $(shell find src -name '*.rs' 2>/dev/null)

# An editable install builds the Rust core (tracekit._core) once with maturin; a change to the
# crate's sources makes it build again (Python changes need nothing: the package is editable).
$(VENV)/.installed: pyproject.toml $(RUST_SOURCES) | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,pyshark]'
	# bytecode as a regular install writes it (an editable one under PYTHONDONTWRITEBYTECODE never does)
	$(BIN)/python -m compileall -q tracekit
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(BIN)/tracekit analyze $(DEMO_SAMPLE)
	$(BIN)/tracekit analyze $(DEMO_SAMPLE) --report demo-report.html --force --json > /dev/null
	@echo "report written to demo-report.html"

test: venv
	cargo test -q --release
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache demo-report.html
