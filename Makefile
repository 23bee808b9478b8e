# capkit: the two commands a user needs are `make demo` and `make test`; both set up .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.capkit-installed
SHARED ?= ../shared/data

.PHONY: setup data demo test test-portable test-browser test-wheel test-fast bench-speed clean notebooks student

setup: $(STAMP)

# torch==2.13.0 is installed first and on its own: it is the local CPU wheel on the course
# machines, and with it present the `torch>=2.1` range in pyproject.toml installs nothing more.
# compileall: an editable install leaves capkit uncompiled, and where PYTHONDONTWRITEBYTECODE is
# set (as on the shared machine here) every process compiles it again (~1.6 s for all of capkit).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[notebooks,dev]"
	$(PY) -m compileall -q capkit data_scripts > /dev/null
	touch $(STAMP)

data: setup
	$(PY) -m capkit data fetch --all $(if $(wildcard $(SHARED)),--mirror $(SHARED),)

demo: data
	$(PY) -m capkit systems --dataset coco_karpathy_test
	$(PY) -m capkit bench --out demo_output

# -rs lists every skip's reason; a skip is allowed only for Java, CoreNLP, hub weights or a GPU
# (tests/skip_policy.py), and the run ends with "skipped: N (allowed: java, corenlp, hub, gpu)"
# CAPKIT_PROGRESS=0: the notebooks' progress bars (on in JupyterLab) stay out of nbval's outputs
test: data
	$(PY) -m pytest -q -rs tests --ignore=tests/browser --ignore=tests/wheel
	CAPKIT_PROGRESS=0 $(PY) -m pytest -q --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg notebooks

# the notebooks' checked outputs as another CPU would compute them: BLAS, MKL, ATen and numpy held
# to older vector kernels (AVX, no AVX2/AVX-512), which add in other orders. A checked number that
# changes here depends on the processor's last bits (a tie broken by rounding, a model trained in
# the notebook) and would fail on some machines; check before storing outputs (`make notebooks`).
# An empty cache of its own: features cached by this machine's kernels would hide the difference
PORTABLE := OPENBLAS_CORETYPE=Sandybridge MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default \
	NPY_DISABLE_CPU_FEATURES="AVX2 FMA3 AVX512F AVX512CD AVX512_SKX"
test-portable: data
	cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && $(PORTABLE) CAPKIT_CACHE_DIR=$$cache \
	  CAPKIT_PROGRESS=0 $(PY) -m pytest -q --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg $(NB)

# every notebook in JupyterLab in headless Chromium (Debian's `chromium`, or $$CAPKIT_CHROMIUM):
# Run All, widgets moved, figures and console checked; screenshots in browser-test-output/
test-browser: data
	$(PY) -m pip install -q -e ".[notebooks,dev,browser]"
	@command -v chromium >/dev/null || test -n "$$CAPKIT_CHROMIUM" || { echo "make test-browser \
	needs Chromium: sudo apt-get install chromium (or set CAPKIT_CHROMIUM to a Chrome binary)"; exit 2; }
	$(PY) -m pytest -q -rs -s tests/browser

# the release as a user installs it (tests/wheel/): python -m build (sdist, wheel), then in a fresh
# venv outside the clone torch==2.13.0 and the wheel from PyPI / pip's cache, and capkit --version,
# data fetch, score and bench from the installed package (~3 min with a warm pip cache)
test-wheel: data
	$(PY) -m pytest -q -rs -s tests/wheel

# re-execute notebooks in place, as committed (NB=notebooks/06_intrinsic_i2ce.ipynb for one);
# figures are then stored as palette PNGs (capkit.course.figures) to keep each notebook < 300 kB
NB ?= notebooks/[0-9][0-9]_*.ipynb
notebooks: setup
	for nb in $(NB); do CAPKIT_PROGRESS=0 $(VENV)/bin/jupyter nbconvert --to notebook --execute \
	  --inplace --ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.record_timing=False \
	  $$nb || exit 1; $(PY) -m capkit.course.figures $$nb; done

# the course lab: student notebooks (solutions replaced by NotImplementedError stubs, outputs
# cleared) in student/, and the answer key notebooks/solutions/NN_*.py, from the same notebooks;
# a student notebook there that would change is overwritten only with FORCE=1
student: setup
	$(PY) -m capkit student --notebooks notebooks --out student $(if $(filter 1 yes true,$(FORCE)),--force)

bench-speed: data
	$(PY) -m capkit bench-speed

clean:
	rm -rf $(VENV)
