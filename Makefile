# gpufleet: one entry point for the toolchain, the lab, tests and the demo.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)
export ANSIBLE_COLLECTIONS_PATH := $(abspath .collections)
export PYTHONDONTWRITEBYTECODE := 1

# what `make test` runs, in this order (scripts/test_stages.sh prints each stage's time at the end); bg:NAME
# runs in the background beside the stages after it: bg:vm boots a Debian 12 VM guest (QEMU) and runs the
# driver role in it (VM_TEST_SCENARIOS; about 13 min alone under TCG on 2 cores, docs/lab.md). GPUFLEET_VM=0 skips it.
# bg:matrix-lowest (one core's work: its unit tests, then molecule smoke) runs beside molecule, after the lab.
TEST_STAGES ?= bg:vm lint sanity importer lab unit integration bg:matrix-lowest molecule
# molecule scenarios run by `make test`, in this order (scripts/molecule_run.sh prints each one's time):
# NAME runs all of the scenario's platforms, NAME:PLATFORM only gpufleet-NAME-PLATFORM. default and brownfield
# run one Debian release each here (half their time); repo (apt 2.6 and apt 3.0 with sqv against the signed
# repository) and airgap (two hosts, one download) keep both. `make molecule-all` runs every platform.
MOLECULE_SCENARIOS ?= smoke default:debian12 brownfield:debian13 repo airgap facts driver audit
# molecule scenarios on lab VM guests (QEMU; SKIPPED where it cannot run or with GPUFLEET_VM=0):
# `make vm` (in make test) runs VM_TEST_SCENARIOS, `make test-vm` the longer VM_SCENARIOS
VM_TEST_SCENARIOS ?= driver-vm
VM_SCENARIOS ?= driver-vm-kernel driver-vm-sb driver-vm-debian13 driver-vm-upgrade

.PHONY: help venv lint unit test-tools integration lab molecule molecule-all vm matrix-lowest test-vm gpu gpu-host test demo audit bench sanity changelog importer clean matrix

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

venv:  ## pinned toolchain in .venv + collections in .collections (idempotent)
	python3 scripts/bootstrap.py

lint: venv  ## yamllint, ansible-lint (production profile), ruff
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: venv  ## unit tests
	$(BIN)/pytest -q tests/unit

test-tools:  ## Prometheus, node exporter, Chromium (monitoring tests), shellcheck (sanity): apt, root or sudo
	scripts/install_test_tools.sh

integration: venv test-tools  ## playbook tests on localhost (no lab) and the monitoring path (Prometheus, Chromium)
	$(BIN)/pytest -q tests/integration

lab: venv  ## docker engine, base images, NVIDIA redist mirror (built only when missing)
	$(PY) -m lab up

molecule: lab  ## the molecule scenarios of MOLECULE_SCENARIOS, then gpu (SKIPPED without an NVIDIA GPU)
	scripts/molecule_run.sh $(MOLECULE_SCENARIOS)
	scripts/molecule_gpu_or_skip.sh

molecule-all: lab  ## MOLECULE_SCENARIOS on every platform of each (default and brownfield on Debian 12 and 13)
	scripts/molecule_run.sh $(foreach s,$(MOLECULE_SCENARIOS),$(firstword $(subst :, ,$(s))))

vm: venv  ## what make test runs on a VM guest: boot, install, reboot, verify (VM_TEST_SCENARIOS; SKIPPED without QEMU)
	scripts/molecule_vm_or_skip.sh $(VM_TEST_SCENARIOS)

test-vm: venv  ## the longer VM guest scenarios, the kernel update guard among them (VM_SCENARIOS; SKIPPED where QEMU cannot run)
	scripts/molecule_vm_or_skip.sh $(VM_SCENARIOS)

gpu: venv  ## molecule gpu (SKIPPED without an NVIDIA GPU)
	scripts/molecule_gpu_or_skip.sh

gpu-host: venv  ## the GPU tests against this machine itself
	$(BIN)/pytest -p no:cacheprovider -rA --hosts=local:// tests/gpu

test: venv  ## the whole test suite (what CI runs): TEST_STAGES in order, then each stage's time
	scripts/test_stages.sh $(TEST_STAGES)

demo: venv  ## the main job: 4 lab hosts with different CUDA/cuDNN stacks, provisioned and audited over SSH
	bash scripts/demo.sh

audit: venv  ## audit this machine (read-only)
	$(BIN)/ansible-playbook playbooks/audit.yml

bench: venv  ## benchmarks, each a ratio to a baseline measured in the same run (docs/scale.md); needs the lab
	$(PY) bench/bench_report.py
	$(PY) bench/bench_facts.py
	$(PY) -m lab up
	$(PY) bench/bench_pipelining.py
	$(PY) bench/bench_molecule_docker.py
	$(PY) bench/bench_audit.py --count $(or $(BENCH_HOSTS),20) --down
	$(PY) bench/bench_install.py
	$(PY) bench/bench_plan.py

sanity: venv test-tools  ## ansible-test sanity on the collection as it ships (offline pip bootstrap; docs/collection.md)
	scripts/sanity.sh

changelog: venv  ## lint the changelog fragments and regenerate CHANGELOG.md
	$(BIN)/antsibull-changelog lint
	$(BIN)/antsibull-changelog generate
	rm -f changelogs/.plugin-cache.yaml

importer: venv  ## build the tarball and run galaxy-importer on it
	scripts/galaxy_importer.sh

clean:  ## remove the toolchain and caches of this checkout (not the lab images)
	rm -rf $(VENV) .collections .cache .pytest_cache .ruff_cache .hypothesis

# ansible-core version matrix (issue 15; tox.ini): the unit tests and molecule smoke on each older minor that
# meta/runtime.yml admits. `make test` runs the dev pin's minor (pyproject.toml) in .venv already, and of the
# older ones the lowest (MATRIX_TEST_ENVS: the two ends of the admitted range in every run; docs/collection.md
# says what the three cost); `make matrix` runs all of MATRIX_ENVS.
MATRIX_ENVS ?= core216,core217,core218
MATRIX_TEST_ENVS ?= core216

matrix: lab  ## unit tests + molecule smoke on each older ansible-core minor (tox.ini; MATRIX_ENVS), side by side
	$(BIN)/tox -p all --parallel-no-spinner -e $(MATRIX_ENVS)

matrix-lowest: lab  ## what make test runs of the matrix: the lowest admitted ansible-core minor (MATRIX_TEST_ENVS)
	$(BIN)/tox -e $(MATRIX_TEST_ENVS)
