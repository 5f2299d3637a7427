# The whole set-up is `make book` (build the site) and `make test` (every test).
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: book site test test-fast serve clean system-book system-fast system-test lint venv

# `make book CLASS=NAME` builds the book with a class's runs (data/classes/NAME/).
CLASS ?= $(LABS_CLASS)
# `make serve` answers on this machine only; ADDRESS=0.0.0.0 opens it to the room's network.
ADDRESS ?= 127.0.0.1
PORT ?= 8000

system-book:
	@bash scripts/system-packages.sh book

system-test:
	@bash scripts/system-packages.sh test

system-fast:
	@bash scripts/system-packages.sh fast

# Reinstall only when the package list changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

book: system-book $(STAMP)
	LABS_CLASS=$(CLASS) $(VPY) -m labs.book.build

# The static site, ready for any static host (relative links; works from a sub-path and
# from file://): _build/site/. CI publishes this folder (.github/workflows/site.yml).
site: system-book $(STAMP)
	LABS_CLASS=$(CLASS) $(VPY) -m labs.book.site

# Two workers: the tests that use the lab VMs in one, every other test in the other
# (tests/session_report.py says why that is safe), each group in its usual order.
test: system-test $(STAMP)
	$(VPY) -m pytest -n 2 --dist loadgroup --durations=40

# Models, parsers, recorded runs, the book and its browser checks: no lab VM, no container,
# no lab run as root. For contributors between changes; `make test` (CI) runs everything.
test-fast: system-fast $(STAMP)
	$(VPY) -m pytest -n 2 --dist loadfile -m "not lab_host" --durations=15

lint: $(STAMP)
	$(VPY) -m ruff check labs tests benchmarks
	$(VPY) -m ruff format --check labs tests

serve:
	@test -f _build/html/index.html || { echo "no site yet: run 'make book' first"; exit 1; }
	@if [ "$(ADDRESS)" != "127.0.0.1" ]; then echo "warning: serving on $(ADDRESS): anyone who can reach this machine can read the book and its runs"; fi
	@echo "serving _build/html on http://$(ADDRESS):$(PORT)/ (Ctrl-C to stop)"
	$(PYTHON) -m http.server --bind $(ADDRESS) --directory _build/html $(PORT)

clean:
	rm -rf _build .pytest_cache .ruff_cache
