# attnviz: `make run` opens the app, `make test` runs the tests; both create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(TORCH_VERSION)

.PHONY: run test lint bench venv clean screenshot wheel-smoke

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION)
	$(PY) -m pip install --quiet -e ".[test,lint,hf]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m attnviz $(ARGS)

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check attnviz tests bench main.py setup.py

# Build the wheel, install it (not editable) into a scratch venv and run it once.
wheel-smoke: $(STAMP)
	bash .ci/wheel_smoke.sh $(PY)

bench: $(STAMP)
	$(PY) bench/run.py $(ARGS)

screenshot: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m attnviz.qt.screenshot

clean:
	rm -rf $(VENV) build *.egg-info
