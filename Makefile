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

# `make test` is the fast gate CI runs (.ci/run), held to TEST_BUDGET seconds on a 2-core machine from a fresh
# clone: a stage still running at the budget is cut and the run fails naming it (scripts/test_stages.sh, which
# ends with each stage's time). bg:NAME runs beside the stages after it; wait:NAME waits for it there. The lab
# (docker, images, mirror) builds beside lint, sanity and importer; unit needs it (its lab tests).
TEST_STAGES ?= bg:lab lint sanity importer wait:lab unit integration molecule
TEST_BUDGET ?= 1800
# `make test-all`: everything, no budget (hours: every platform, the ansible-core matrix, the VM guests, the GPU).
# The VM guests (the longest stage) start beside the docker stages at nice 10: they mostly wait for the foreground,
# so test-all lasts about the foreground plus the guests alone.
TEST_ALL_STAGES ?= bg:lab lint sanity importer wait:lab bg:test-vm unit integration molecule-all matrix gpu wait:test-vm
# molecule scenarios of `make test`: one per role path (the roles' defaults: NVIDIA's repository, the redist
# archives, the driver, the audit), brownfield (what gpufleet does not own) and journey (README.md's commands on
# the installed tarball), each on one platform (NAME:PLATFORM), MOLECULE_JOBS at a time
# (scripts/molecule_run.sh prints each one's time). repo (an admin's upgrades and tampered repositories on the
# same path as default) runs in `make molecule-all`, which runs MOLECULE_ALL_SCENARIOS on every platform each lists.
# el, el-brownfield and ubuntu (the dnf path on EL-shaped hosts, the apt path on an Ubuntu-shaped one) and arm64 (an Arm
# server under QEMU user emulation) too, after `make lab-shaped` builds their images, the RPM repositories and the
# mirror's linux-sbsa archives.
MOLECULE_SCENARIOS ?= default:debian12 brownfield:debian13 redist:debian12 journey audit driver
MOLECULE_ALL_SCENARIOS ?= smoke default redist brownfield repo airgap facts driver audit journey removal el el-brownfield ubuntu arm64
MOLECULE_JOBS ?= 2
export MOLECULE_JOBS
# molecule scenarios on lab VM guests (QEMU; SKIPPED where it cannot run or with GPUFLEET_VM=0): `make vm` runs
# VM_TEST_SCENARIOS (one guest: boot, driver install, reboot, verify), `make test-vm` VM_SCENARIOS: every VM
# scenario but driver-vm, whose guest, playbooks and tests driver-vm-kernel runs before its kernel update
VM_TEST_SCENARIOS ?= driver-vm
VM_SCENARIOS ?= driver-vm-kernel driver-vm-sb driver-vm-debian13 driver-vm-upgrade

.PHONY: help venv lint unit test-tools integration lab lab-shaped molecule molecule-all vm matrix-lowest test-vm gpu gpu-host test test-all demo audit bench sanity changelog importer clean matrix

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

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

molecule: lab  ## make test's molecule scenarios (MOLECULE_SCENARIOS, MOLECULE_JOBS at a time)
	scripts/molecule_run.sh $(MOLECULE_SCENARIOS)

lab-shaped: lab  ## EL-, Ubuntu-shaped and arm64 images, the RPM repositories, the linux-sbsa archives and sbsa repository (only when missing or changed)
	$(PY) -m lab images el9-systemd el10-systemd ubuntu2404-systemd debian12-arm64-systemd ubuntu2404-arm64-systemd
	$(PY) -m lab rpms build
	$(PY) -m lab mirror sbsa

molecule-all: lab lab-shaped  ## every docker scenario on every platform (MOLECULE_ALL_SCENARIOS, MOLECULE_JOBS at a time)
	scripts/molecule_run.sh $(MOLECULE_ALL_SCENARIOS)

vm: venv  ## one VM guest: boot, driver install, reboot, verify (VM_TEST_SCENARIOS; SKIPPED without QEMU)
	scripts/molecule_vm_or_skip.sh $(VM_TEST_SCENARIOS)

test-vm: venv  ## every VM guest scenario (VM_SCENARIOS; SKIPPED where QEMU cannot run): before touching the driver role or lab/vm*
	scripts/molecule_vm_or_skip.sh $(VM_SCENARIOS)

gpu: venv  ## molecule gpu (SKIPPED without an NVIDIA GPU)
	scripts/molecule_gpu_or_skip.sh

gpu-host: venv  ## the GPU tests against this machine itself
	$(BIN)/pytest -p no:cacheprovider -rA --hosts=local:// tests/gpu

test: venv  ## the fast gate (what CI runs): TEST_STAGES within TEST_BUDGET seconds, then each stage's time
	TEST_BUDGET=$(TEST_BUDGET) scripts/test_stages.sh $(TEST_STAGES)

test-all: venv  ## everything (TEST_ALL_STAGES, hours): before resolving work on roles, plugins or the lab
	TEST_BUDGET=0 TEST_KEEP_GOING=1 scripts/test_stages.sh $(TEST_ALL_STAGES)

demo: venv  ## the main job: 4 lab hosts with different CUDA/cuDNN stacks, provisioned and audited over SSH
	bash scripts/demo.sh

audit: venv  ## audit this machine (read-only)
	$(BIN)/ansible-playbook playbooks/audit.yml

bench: venv  ## benchmarks, each a ratio to a baseline measured in the same run (bench/README.md); needs the lab
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

# ansible-core version matrix (tox.ini): the unit tests and molecule smoke on each older minor that
# meta/runtime.yml admits; `make test` runs the dev pin's minor (pyproject.toml) in .venv, `make matrix` (in
# test-all) MATRIX_ENVS side by side, `make matrix-lowest` the lowest alone (docs/collection.md says what each costs).
MATRIX_ENVS ?= core216,core217,core218
MATRIX_TEST_ENVS ?= core216

matrix: lab  ## unit tests + molecule smoke on each older ansible-core minor (tox.ini; MATRIX_ENVS), side by side
	$(BIN)/tox -p all --parallel-no-spinner -e $(MATRIX_ENVS)

matrix-lowest: lab  ## of the matrix, the lowest admitted ansible-core minor only (MATRIX_TEST_ENVS)
	$(BIN)/tox -e $(MATRIX_TEST_ENVS)
