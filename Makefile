# Two commands on a fresh machine: `make verify` and `make test`.  Both build .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SEED   ?= 0

# One BLAS thread per process unless the caller says otherwise: the solver's matrices are small
# (at most a few hundred rows), and threads only cost.  Seed 11 m = 18, 16 starts of 36 layers
# in 6 segments: 16 s with one thread against 22 s with OpenBLAS's default; two such processes
# at once on the 2-core machine, 20 s each against 67-84 s (docs/solver-reach.md).
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: setup setup-tex verify test test-thorough docs bench reach models estimates certificates lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)

# pdflatex for compiling the appendix (optional: the compile tests are skipped without it); needs root and apt-get.
# Then, where they install, two journals' two-column classes (IEEEtran, revtex) and pdftotext: the tests set the
# appendix in them too and read every row back from the PDF (each is skipped where it is missing).
setup-tex:
	command -v pdflatex >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends texlive-latex-base texlive-latex-recommended texlive-fonts-recommended >/dev/null; }
	kpsewhich IEEEtran.cls >/dev/null && command -v pdftotext >/dev/null || DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends texlive-publishers poppler-utils >/dev/null || \
	  echo "the publishers' classes or pdftotext could not be installed: their tests will be skipped"

PROFILE ?= standard

# make verify owns reports/: it replaces the outputs of the last run (--force); `verify run` alone refuses to
verify: $(STAMP)
	$(PY) -m verify selfcheck --quiet --force --seed $(SEED) --out reports/selfcheck
	$(PY) -m verify run --force --profile $(PROFILE) --seed $(SEED) --out reports

test: $(STAMP) docs
	$(PY) -m ruff check verify verify_replay theorems property_tests
	$(PY) -m pytest -q verify verify_replay theorems property_tests

# The API reference from the docstrings (Sphinx autodoc + napoleon); a warning fails the build.  Open build/docs/index.html.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs/api build/docs

test-thorough: $(STAMP)
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -q verify verify_replay theorems property_tests

# Each run is kept as reports/benchmarks/history/<machine>/NNNN_<date>-<commit>.json (pytest-benchmark's
# storage); `make bench COMPARE=0003` also compares with run 0003 (or a name's prefix), `pytest-benchmark list`
# lists them.  latest.json is the newest run, which `verify run` tabulates in summary.md.
BENCH_NAME ?= $(shell date -u +%Y%m%d)-$(shell git rev-parse --short HEAD 2>/dev/null || echo no-git)
COMPARE ?=
bench: $(STAMP)
	mkdir -p reports/benchmarks
	$(PY) -m pytest -q -o addopts="" -o python_files="bench_*.py" property_tests/benchmarks --ignore=property_tests/benchmarks/bench_solver.py --ignore=property_tests/benchmarks/bench_models.py --benchmark-json=reports/benchmarks/latest.json --benchmark-storage=file://reports/benchmarks/history --benchmark-save=$(BENCH_NAME) $(if $(COMPARE),--benchmark-compare=$(COMPARE))

lint: $(STAMP)
	$(PY) -m ruff check verify verify_replay theorems property_tests

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .benchmarks build

reach: $(STAMP)
	mkdir -p reports/benchmarks
	$(PY) -m pytest -q -s -o addopts="" -o python_files="bench_*.py" property_tests/benchmarks/bench_solver.py --benchmark-json=reports/benchmarks/reach.json

models: $(STAMP)
	mkdir -p reports/benchmarks
	$(PY) -m pytest -q -s -o addopts="" -o python_files="bench_*.py" property_tests/benchmarks/bench_models.py --benchmark-json=reports/benchmarks/models.json

# The certificates' reach table of issues 51 and 66 (docs/verdicts.md): the witness files at m = 8-64 in
# property_tests/certificate_witnesses/, certified replay and existence proof for each, one row per unit of a
# sweep on a local Dask cluster (one process per core), journalled in reports/certificates/journal.jsonl;
# RESUME=1 takes the rows finished there, SEARCH=1 makes the witnesses afresh from their seeds.
RESUME ?=
SEARCH ?=
certificates: $(STAMP)
	mkdir -p reports/certificates
	$(PY) -m property_tests.certificates_table reports/certificates $(if $(RESUME),--resume) $(if $(SEARCH),--search) | tee reports/certificates/table.jsonl

# Error estimates tested as claims: COUNT adversarial draws from seed FIRST, the float64 estimate
# against a 30-digit truth (docs/verdicts.md); about an hour for 1200 draws on one core.
COUNT ?= 1200
FIRST ?= 3000
estimates: $(STAMP)
	mkdir -p reports/benchmarks
	rm -f reports/benchmarks/estimates.json
	$(PY) -m property_tests.estimates $(COUNT) $(FIRST) reports/benchmarks/estimates.json

