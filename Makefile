# The whole set-up is `make book` (build the site) and `make test` (every test).
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: book test serve clean system-book system-test lint

system-book:
	@bash scripts/system-packages.sh book

system-test:
	@bash scripts/system-packages.sh test

# Reinstall only when the package list changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

book: system-book $(STAMP)
	$(VPY) -m labs.book.build

test: system-test $(STAMP)
	$(VPY) -m pytest --durations=25

lint: $(STAMP)
	$(VPY) -m ruff check labs tests benchmarks
	$(VPY) -m ruff format --check labs tests

serve:
	@test -f _build/html/index.html || { echo "no site yet: run 'make book' first"; exit 1; }
	@echo "serving _build/html on http://127.0.0.1:8000/ (Ctrl-C to stop)"
	$(PYTHON) -m http.server --bind 127.0.0.1 --directory _build/html 8000

clean:
	rm -rf _build .pytest_cache .ruff_cache
