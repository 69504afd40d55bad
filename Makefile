# streamlearn: `make demo` and `make test` do all the set-up on a fresh machine (python3 with venv).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := build/demo

.PHONY: all venv demo test bench bench-serve repro samples clean fuzz soak golden structure docs vwsuite

all: test

$(STAMP): pyproject.toml
	@echo "make: creating $(VENV) and installing streamlearn with its test tools (numba, numpy, scipy, click, pytest, ...;"
	@echo "make: about a minute on a fresh machine, once; pip's progress follows)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --progress-bar on -e '.[test]'
	@echo "make: installing vowpalwabbit (optional: the tests compare streamlearn's numbers with VW's)"
	@$(BIN)/python -m pip install --progress-bar on -e '.[vw]' \
	  || echo "note: vowpalwabbit could not be installed; the comparisons with VW will be skipped"
	@# an editable install writes no bytecode of the package (pip writes it for a wheel); where
	@# PYTHONDONTWRITEBYTECODE is set, every run would compile each module from source again (~0.1 s)
	$(BIN)/python -m compileall -q streamlearn > /dev/null
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@mkdir -p $(DEMO)
	$(BIN)/streamlearn train -d data/samples/sparse.train.vw --loss logistic --algo tg --l1 0.0005 -l 0.5 \
	  --passes 5 -f $(DEMO)/sparse.model --readable-model $(DEMO)/sparse.model.txt
	$(BIN)/streamlearn predict -i $(DEMO)/sparse.model -d data/samples/sparse.test.vw \
	  -p $(DEMO)/sparse.test.predictions --binary
	@echo "demo outputs are in $(DEMO)/"

# two pytest-xdist workers, one test file per worker at a time (a file's kernels compile in one process)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --hypothesis-profile=ci

# issue 24: the fuzzers of the parsers, model loader and cache reader at length (about 10 minutes);
# STREAMLEARN_FUZZ_SCALE multiplies their examples (1 in make test)
FUZZ_SCALE ?= 20
fuzz: $(STAMP)
	STREAMLEARN_FUZZ_SCALE=$(FUZZ_SCALE) $(BIN)/python -m pytest -q -p no:cacheprovider --hypothesis-profile=fuzz \
	  tests/robustness/test_fuzz.py tests/robustness/test_model_validation.py tests/robustness/test_cache_integrity.py \
	  tests/robustness/test_numbers.py tests/api/test_api_inputs.py

# issue 24: 10^8 generated examples through train on stdin, peak RSS every 10^7 (bench/RESULTS.md)
soak: $(STAMP)
	$(BIN)/python -m bench run soak --out bench/RESULTS.md

# issue 26: byte-identical models and predictions against tools/golden.json, the option interface against
# tools/interface.json; the structure's figures
golden: $(STAMP)
	$(BIN)/python tools/golden.py --check tools/golden.json
	$(BIN)/python tools/interface.py --check tools/interface.json

structure:
	python3 tools/structure.py

# issue 27: VW's own test suite (../shared/data/vw/suite): tests in scope, passed, failed and why
vwsuite: $(STAMP)
	$(BIN)/python tests/support/vwsuite.py

# issue 26: the learner tables of README.md and docs/ from the learners' specs
docs: $(STAMP)
	$(BIN)/python tools/docs.py --write

bench: $(STAMP)
	@$(BIN)/python -c 'import matplotlib' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench suite bench

# issue 28: serving under load (TCP and HTTP, 1/8/64 connections) against `predict` over a pipe,
# SGDClassifier behind aiohttp and echo servers; bench/RESULTS.md's issue28_serve section
bench-serve: $(STAMP)
	@$(BIN)/python -c 'import aiohttp, sklearn' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench run serve --out bench/RESULTS.md

# the seed papers' experiments (issue 15; bench/REPRODUCTIONS.md): longer than make bench
repro: $(STAMP)
	@$(BIN)/python -c 'import matplotlib, sklearn' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench suite repro

samples: $(STAMP)
	$(BIN)/python -m streamlearn.datasets samples data/samples

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
