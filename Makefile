# attnviz: `make run` opens the app, `make test` runs the tests; both create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(TORCH_VERSION)

.PHONY: run test test-fast lint bench bench-smoke venv clean screenshot figures readme-numbers wheel-smoke translations

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION)
	$(PY) -m pip install --quiet -e ".[test,lint,hf]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m attnviz $(ARGS)

# The tests run in one process per core (pytest-xdist), each test file in one process (its module
# fixtures, a window say, built once); WORKERS=0 runs them in this process.
WORKERS ?= auto
PYTEST := QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n $(WORKERS) --dist loadfile

test: $(STAMP)
	$(PYTEST)

# The quick loop: everything but the tests marked slow (the whole window, trainings, subprocesses).
test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check attnviz tests bench main.py setup.py
	$(VENV)/bin/lint-imports

# Build the wheel, install it (not editable) into a scratch venv and run it once.
wheel-smoke: $(STAMP)
	bash .ci/wheel_smoke.sh $(PY)

bench: $(STAMP)
	$(PY) bench/run.py $(ARGS)

# Every suite at its smallest size (bench/smoke.py), one process each: each still runs, or this
# fails; its figures are no measurements. Well under 2 minutes; .ci/run runs it.
bench-smoke: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) bench/run.py --smoke $(ARGS)

screenshot: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m attnviz.qt.screenshot

# Every number README.md quotes of the default model, measured again on it and printed by README
# section (bench/readme_numbers.py); ARGS=--slow adds the slow sections, ARGS="--only circuit,patching"
# picks some, ARGS="--model DIR" measures another bundle. Writes nothing in the repository.
readme-numbers: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) bench/readme_numbers.py $(ARGS)

# The README's figures, drawn headless from the bundled models; writes only these nine files.
FIGURES := resources/figures
VIEW := QT_QPA_PLATFORM=offscreen $(PY) -m attnviz export
EXPORT := $(VIEW) --kind encoder
figures: $(STAMP)
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(EXPORT) --view compare --src 猫吃鱼。 --size 1400x820 --out "$$tmp/compare" && \
	$(EXPORT) --view scaling --src 猫吃鱼。 --size 1400x1170 --out "$$tmp/scaling" && \
	$(EXPORT) --view norm-batch --src 我喜欢吃鱼。 --model models/zh-en-small-batchnorm --size 1100x760 --out "$$tmp/norm-batch" && \
	cp "$$tmp"/compare/*.png $(FIGURES)/compare.png && \
	cp "$$tmp"/scaling/*.png $(FIGURES)/scaling.png && \
	$(EXPORT) --view head --kind cross --layer 2 --head 1 --model models/zh-en-small-guided --src 猫吃鱼。 \
	    --tgt "The cat eats fish." --size 520x420 --out "$$tmp/word-order-1" && \
	$(EXPORT) --view head --kind cross --layer 2 --head 1 --model models/zh-en-small-guided --src 鱼吃猫。 \
	    --tgt "The fish eats the cat." --size 520x420 --out "$$tmp/word-order-2" && \
	cp "$$tmp"/norm-batch/*.png $(FIGURES)/norm-batch.png && \
	cp "$$tmp"/word-order-1/*.png $(FIGURES)/word-order-guided-1.png && \
	cp "$$tmp"/word-order-2/*.png $(FIGURES)/word-order-guided-2.png && \
	$(VIEW) --view importance --src 猫吃鱼。 --size 1100x420 --out "$$tmp/importance" && \
	$(VIEW) --view patching --src 猫吃鱼。 --size 1100x640 --out "$$tmp/patching" && \
	$(VIEW) --view attribution --src 尽管今天下了雨，但我因为拿到了梦寐以求的工作offer而感到非常开心和兴奋。 \
	    --tgt "Although it rained today, I felt very happy and excited because I got my dream job offer." \
	    --query 9 --size 1300x620 --out "$$tmp/attribution" && \
	cp "$$tmp"/importance/*.png $(FIGURES)/head-importance.png && \
	cp "$$tmp"/patching/*.png $(FIGURES)/patching.png && \
	cp "$$tmp"/attribution/*.png $(FIGURES)/attribution.png && \
	for v in logit-attribution contributions heads circuit model-map; do \
	    $(VIEW) --view $$v --src 猫吃鱼。 --size 1100x640 --out "$$tmp/$$v" && cp "$$tmp/$$v"/*.png $(FIGURES)/$$v.png || exit 1; done && \
	$(VIEW) --view qk --kind cross --layer 1 --head 1 --src 猫吃鱼。 --size 900x600 --out "$$tmp/qk" && \
	$(VIEW) --view neighbours --src 猫吃鱼。 --steps 2 --size 1100x260 --out "$$tmp/neighbours" && \
	cp "$$tmp"/qk/*.png $(FIGURES)/qk.png && \
	cp "$$tmp"/neighbours/*.png $(FIGURES)/neighbours.png && \
	QT_QPA_PLATFORM=offscreen $(PY) -m attnviz animate --src 猫吃鱼。 --view head,output --kind cross --layer 3 --head 2 \
	    --size 600x440 --fps 1.5 --out "$$tmp/decoding.gif" && \
	cp "$$tmp/decoding.gif" $(FIGURES)/decoding.gif

clean:
	rm -rf $(VENV) build *.egg-info

# The interface's translations: extract every translate(...) string of attnviz/qt into the .ts
# (existing translations kept, vanished strings dropped), then build the .qm the app loads.
translations: $(STAMP)
	$(VENV)/bin/pyside6-lupdate -silent -locations none -no-obsolete $$(find attnviz/qt -name '*.py' | sort) -ts resources/i18n/attnviz_zh_CN.ts
	sed -i "s/&apos;/'/g; s/&quot;/\"/g" resources/i18n/attnviz_zh_CN.ts  # quotes in text need no escape: keep the file's diffs to what changed
	$(VENV)/bin/pyside6-lrelease -silent resources/i18n/attnviz_zh_CN.ts -qm resources/i18n/attnviz_zh_CN.qm
