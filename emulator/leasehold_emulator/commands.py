"""The commands the emulator package adds to ``leasehold``: the simulator's
(``simulate``, ``trace``, ``swf``, ``workload``, ``experiment``) and the emulated
cluster's (``emulator``, ``up``, ``demo``).

Each ``add_<command>`` is an entry point of the group ``leasehold.commands``
(pyproject.toml), which :mod:`leasehold.cli` finds: the operator package never
imports this one (DESIGN §1). This module imports only what building the parser
needs; each command imports its own code when it runs, so that a command whose extra
is missing fails alone, in one line (``extra`` in its defaults; leasehold.commands).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from leasehold.commands import (
    BACKFILLING,
    DISPATCH,
    POLICIES,
    Subparsers,
    count,
    fail,
    missing,
    needs,
    positive,
    write_output,
)

if TYPE_CHECKING:
    from leasehold.api.scenario import Scenario


def _is_trace(path: str) -> bool:
    return path.endswith((".jsonl", ".jsonl.gz"))


def _load_run(path: str, skip_bad_lines: bool = False) -> Scenario:
    """A scenario file, or a leasehold trace (``.jsonl``, ``.jsonl.gz``) whose header
    names its cluster. Raises ``ScenarioError``."""
    from leasehold.api.scenario import ScenarioError, load_scenario

    if not _is_trace(path):
        return load_scenario(path)
    from .workloads.trace import (
        TraceError,
        TraceLineError,
        read_trace,
        trace_scenario,
    )

    skipped: list[str] = []
    try:
        trace = read_trace(path, skip_bad_lines, skipped)
    except TraceLineError as exc:
        raise ScenarioError([f"{exc} (--skip-bad-lines leaves such lines out)"]) from None
    except TraceError as exc:
        raise ScenarioError([str(exc)]) from None
    if skipped:
        print(f"warning: skipped {len(skipped)} malformed lines; the first: {skipped[0]}",
              file=sys.stderr)
    return trace_scenario(trace, path)


def cmd_simulate(args: argparse.Namespace) -> int:
    from leasehold.api.scenario import ScenarioError

    from .sim.engine import simulate
    from .sim.report import result_document, to_json, to_table

    try:
        scenario = _load_run(args.scenario, args.skip_bad_lines)
    except ScenarioError as exc:
        return fail(exc.problems)
    if scenario.config.utility is not None:  # seed 002's utility mode (docs/volatile.md)
        from .sim.utility import simulate_utility, utility_document, utility_table

        for flag in ("policy", "backfilling"):
            if getattr(args, flag) is not None:
                print(f"warning: --{flag} is not read in the utility mode (config.utility)",
                      file=sys.stderr)
        udoc = utility_document(simulate_utility(scenario))
        return write_output(to_json(udoc) if args.output == "json" else utility_table(udoc),
                            args.out)
    pools = scenario.pool_specs()
    config = scenario.scheduler_config(policy=args.policy, backfilling=args.backfilling)
    result = simulate(pools, config, scenario.requests(),
                      capacity=scenario.cluster.capacity_changes(), seed=scenario.config.seed)
    doc = result_document(result, pools)
    return write_output(to_json(doc) if args.output == "json" else to_table(doc), args.out)


def cmd_trace_convert(args: argparse.Namespace) -> int:
    """A scenario as a leasehold trace, or a trace (with its cluster) as a scenario."""
    import yaml

    from leasehold.api.scenario import ScenarioError

    from .workloads.trace import FORMAT, VERSION, TraceHeader, trace_lines

    try:
        scenario = _load_run(args.input)
    except ScenarioError as exc:
        return fail(exc.problems)
    if _is_trace(args.input):
        doc = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
        text = yaml.safe_dump(doc, sort_keys=False)
    else:
        header = TraceHeader(format=FORMAT, version=VERSION, source=args.input,
                             cluster=scenario.cluster)
        text = "".join(line + "\n" for line in trace_lines(scenario.leases, header))
    return write_output(text, args.out)


def cmd_trace_export(args: argparse.Namespace) -> int:
    """The Leases of the cluster the kubeconfig reaches, as a leasehold trace."""
    from .export import ExportError, export
    from .workloads.trace import trace_lines, write_trace

    try:
        got = export(args.kubeconfig, args.namespace)
    except ExportError as exc:
        return fail([str(exc)])
    for line in got.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if not got.leases:
        return fail([f"{got.header.source}: no Lease could be exported (see the warnings)"])
    if args.out is None:
        return write_output("".join(line + "\n" for line in
                                    trace_lines(got.leases, got.header, got.observed)), None)
    try:  # gzipped when it ends in .gz
        write_trace(args.out, got.leases, got.header, got.observed)
    except OSError as exc:
        return fail([f"cannot write {args.out}: {exc.strerror or exc}"])
    print(f"wrote {args.out}: {len(got.leases)} leases", file=sys.stderr)
    return 0


def _choices(text: str, choices: tuple[str, ...], flag: str) -> list[str] | str:
    """A comma-separated list of ``choices``, or what is wrong with it."""
    given = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in given if x not in choices]
    if bad or not given:
        return (f"{flag} {text}: {', '.join(map(repr, bad)) or 'empty'} is not one of"
                f" {', '.join(choices)} (a comma-separated list)")
    return list(dict.fromkeys(given))


def cmd_whatif(args: argparse.Namespace) -> int:
    """A trace replayed under each setting, beside what the cluster did: one report."""
    from leasehold.api.scenario import ScenarioError

    from .workloads.trace import TraceError, read_trace, trace_scenario

    lists = [_choices(args.policy, POLICIES, "--policy"),
             _choices(args.backfilling, BACKFILLING, "--backfilling"),
             _choices(args.dispatch, DISPATCH, "--dispatch")]
    problems = [x for x in lists if isinstance(x, str)]
    if problems:
        return fail(problems)
    policies, backfillings, dispatches = (x for x in lists if isinstance(x, list))
    if not _is_trace(args.trace):
        return fail([f"{args.trace}: not a leasehold trace (.jsonl, .jsonl.gz); `leasehold"
                     " trace export` writes one from a cluster, `leasehold trace convert`"
                     " from a scenario"])
    try:
        trace = read_trace(args.trace)
        scenario = trace_scenario(trace, args.trace)
    except TraceError as exc:
        return fail([str(exc)])
    except ScenarioError as exc:
        return fail(exc.problems)
    # the input read: now the simulator and its report (matplotlib, slow to import)
    from .sim.experiment import ProgressBar
    from .sim.whatif import compare, settings, write_report

    if not trace.observed:
        print(f"warning: {args.trace} says nothing of what the cluster did (no observed"
              " lines): the report has no baseline row", file=sys.stderr)
    out = Path(args.out) if args.out else Path(args.trace).parent / (
        "whatif-" + Path(args.trace).name.split(".")[0])

    def progress(label: str, k: int, n: int) -> ProgressBar | None:
        if args.quiet:
            return None
        print(f"replaying {len(trace.leases)} leases under {label} ({k + 1}/{n})",
              file=sys.stderr)
        return ProgressBar()

    chosen = settings(policies, backfillings, dispatches)
    runs = compare(trace, scenario, chosen, progress)
    try:
        files = write_report(out, trace.header.source or args.trace, runs)
    except OSError as exc:
        return fail([f"cannot write the report in {out}: {exc.strerror or exc}"])
    print(f"report: {next(f for f in files if f.name == 'report.md')}"
          f" and {next(f for f in files if f.name == 'report.html')}")
    return 0


def cmd_swf(args: argparse.Namespace) -> int:
    """Replay an SWF trace on one exclusive pool (one VM per node) and print the waits;
    with ``--inject``, with a Haizea LWF file's advance reservations among its jobs
    (004 §4.2), and how many jobs were suspended for them (none unless
    ``--suspend-before-blocking``: the plan goes around reservations known ahead)."""
    from leasehold.core.model import Backfilling, LeaseType, Phase, PoolSpec, SchedulerConfig

    from .sim.engine import simulate
    from .sim.metrics import run_metrics
    from .workloads.lwf import LWFError, lwf_requests
    from .workloads.swf import SWFError, swf_requests

    skipped: list[str] = []
    requests = []
    for path, read, error in [(args.trace, swf_requests, SWFError),
                              *([(args.inject, lwf_requests, LWFError)] if args.inject else [])]:
        try:
            requests += read(path, skip_bad_lines=args.skip_bad_lines, skipped=skipped)
        except OSError as exc:
            return fail([f"cannot read {path}: {exc.strerror}"])
        except error as exc:
            return fail([f"{exc} (--skip-bad-lines leaves such lines out)"])
    if skipped:
        print(f"warning: skipped {len(skipped)} malformed lines; the first: {skipped[0]}",
              file=sys.stderr)
    too_big = [r.name for r in requests if r.vms > args.nodes]
    if too_big:
        return fail([f"{args.trace}: job {too_big[0]} needs more than --nodes {args.nodes} "
                      f"nodes ({len(too_big)} such jobs)"])
    # submission order; a job and a reservation submitted together keep file order
    requests.sort(key=lambda r: r.submitted)
    ars = sum(r.type == LeaseType.ADVANCE_RESERVATION for r in requests)
    pool = PoolSpec("trace", args.nodes, 1000, 1024, exclusive=True)
    suspensions = bool(ars) or args.suspend_before_blocking
    print(f"{'backfilling':<14}{'jobs':>6}{'mean wait (min)':>17}{'utilization':>13}"
          + (f"{'suspended':>11}" if suspensions else "")
          + (f"{'ARs rejected':>14}{'all best-effort (h)':>21}" if ars else ""))
    for mode in args.backfilling:
        config = SchedulerConfig(backfilling=Backfilling(mode),
                                 suspend_before_blocking=args.suspend_before_blocking)
        result = simulate([pool], config, requests, keep_actions=False)
        leases = result.scheduler.leases()
        m = run_metrics(leases, [pool])
        line = (f"{mode:<14}{m['leases'] - ars:>6}{m['meanWaitSeconds'] / 60:>17.2f}"
                f"{m['utilization']:>13.1%}")
        if suspensions:
            line += f"{sum(s.suspensions > 0 for s in leases):>11}"
        if ars:
            rejected = sum(s.phase == Phase.REJECTED for s in leases
                           if s.request.type == LeaseType.ADVANCE_RESERVATION)
            line += f"{f'{rejected}/{ars}':>14}{m['allBestEffortSeconds'] / 3600:>21.1f}"
        print(line)
    return 0


def cmd_emulator(args: argparse.Namespace) -> int:
    """The emulated cluster: up (foreground), down, status; or only its nodes."""
    if args.emulator_command == "nodes":  # a client of any cluster: no certificates
        from .nodes import run_nodes

        try:
            run_nodes(args.kubeconfig, args.time_scale)
        except ValueError as exc:
            return fail([str(exc)])
        return 0
    from .apiserver import run

    data = Path(args.data).expanduser()
    try:
        if args.emulator_command == "up":
            run.up(data, port=args.port, time_scale=args.time_scale,
                   pools=Path(args.pools) if args.pools else None, with_nodes=not args.no_nodes,
                   max_body=args.max_body, event_ttl=args.event_ttl)
        elif args.emulator_command == "token":
            user = run.subject(args.user, args.group or [], args.service_account)
            token = run.mint(data, user, Path(args.kubeconfig) if args.kubeconfig else None)
            if args.kubeconfig:
                print(f"wrote {args.kubeconfig}: {user.name} with a new token")
            else:
                print(token)
        elif args.emulator_command == "down":
            print(f"stopped the emulated cluster of {data} (pid {run.down(data)})")
        else:
            print(run.status(data))
    except run.EmulatorError as exc:
        return fail([str(exc)])
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    """The emulated cluster, the operator and the metrics, in the foreground."""
    from .up import UpError, up

    try:
        up(Path(args.data).expanduser(), args.port, args.time_scale, args.policy,
           args.metrics_port, Path(args.pools) if args.pools else None,
           args.local_namespace if args.local_namespace is not None else ("owners",),
           args.dispatch)
    except UpError as exc:
        return fail([str(exc)])
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The testbed on the embedded emulated cluster, under each policy."""
    from .demo import DemoError, run_demo

    try:
        run_demo(args.time_scale, tuple(args.policies))
    except DemoError as exc:
        return fail([str(exc)])
    except KeyboardInterrupt:
        return 130
    return 0


#: per workload model, its presets (the first is the default)
WORKLOAD_PRESETS = {
    "lublin99": ("program", "typeless", "papers"),
    "das2": ("gridsim", "c64", "c128", "c256", "grid"),
}


def cmd_workload(args: argparse.Namespace) -> int:
    """Generate a synthetic workload and write it as SWF."""
    from .workloads import das2, lublin99

    presets = WORKLOAD_PRESETS[args.model]
    preset = args.preset or presets[0]
    if preset not in presets:
        return fail([f"--preset {preset}: {args.model} has the presets {', '.join(presets)}"])
    if args.model == "lublin99":
        model = lublin99.PRESETS[preset]
        text = lublin99.to_swf(lublin99.generate(args.jobs, args.seed, model, rng=args.rng),
                               model)
    else:
        if args.rng != "numpy":
            return fail([f"--rng {args.rng}: only lublin99 has the C program's stream"])
        model = das2.PRESETS[preset]
        text = das2.to_swf(das2.generate(args.jobs, args.seed, model), model)
    return write_output(text, args.out)


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run an experiment file's missing units, then write its report."""
    from .sim import report004
    from .sim.experiment import (
        ExperimentError,
        ProgressBar,
        load_experiment,
        run,
    )
    from .sim.experiment_report import write_report

    # the extra `dask`, said in one line before anything runs
    if args.cluster is not None and (gone := missing("dask")):
        return fail([needs("experiment run --cluster", "dask", gone)])
    try:
        runner = None
        if args.cluster is not None:
            from .sim.dask_units import dask_units

            runner = dask_units(args.cluster)
        spec = load_experiment(args.file)
        out = Path(args.out) if args.out else Path(args.file).parent / f"results-{spec.name}"
        ran = run(spec, out, args.processes, progress=None if args.quiet else ProgressBar(),
                  runner=runner)
        # 004's: Table 1 beside the paper and Fig. 2, not the per-metric statistics of
        # replicated random workloads (one fixed trace, one run per workload)
        files = (report004.write_report if spec.is_004() else write_report)(spec, out)
    except ExperimentError as exc:
        return fail(exc.problems)
    except OSError as exc:
        return fail([f"cannot write the results: {exc}"])
    total = len(spec.points()) * spec.replications
    reports = " and ".join(str(f) for f in files if f.stem == "report")
    print(f"{ran} of {total} units run ({total - ran} were already in {out / 'results.csv'});"
          f" report: {reports}")
    return 0



def cmd_table_i(args: argparse.Namespace) -> int:
    """000 Table I from the sweeps' results: leasehold's interval beside the paper's."""
    from .sim.experiment import ExperimentError, done_keys, load_experiment, read_results
    from .sim.experiment_report import PAPER_TABLE_I, table_i

    results, problems = [], []
    for file in args.files:
        try:
            spec = load_experiment(file)
        except ExperimentError as exc:
            problems += exc.problems
            continue
        if spec.name not in PAPER_TABLE_I:
            problems.append(f"{file}: {spec.name}: not a row of 000 Table I (its rows:"
                            f" {', '.join(PAPER_TABLE_I)})")
            continue
        out = Path(file).parent / f"results-{spec.name}"
        try:
            done_keys(out)  # refuses results of another version's columns, in one line
            results.append((spec, read_results(out)))
        except ExperimentError as exc:
            problems += exc.problems
        except OSError:
            problems.append(f"{file}: {spec.name}: no results in {out}; run `leasehold"
                            f" experiment run {file}` first")
    if problems:
        return fail(problems)
    return write_output(table_i(results), args.out)


def add_simulate(sub: Subparsers) -> None:
    sim = sub.add_parser("simulate", help="run one discrete-event simulation of a scenario file")
    sim.add_argument("scenario", help="scenario YAML (see examples/scenarios/), or a leasehold"
                     " trace (.jsonl, .jsonl.gz) whose header names its cluster")
    sim.add_argument("--policy", choices=POLICIES, help="override config.policy")
    sim.add_argument("--backfilling", choices=BACKFILLING, help="override config.backfilling")
    sim.add_argument("-o", "--output", choices=("json", "table"), default="json",
                     help="output format (default: json)")
    sim.add_argument("--out", metavar="FILE", help="write the output to FILE instead of stdout")
    sim.add_argument("--skip-bad-lines", action="store_true",
                     help="a trace's malformed lines are left out (with a warning)")
    sim.set_defaults(func=cmd_simulate)


def add_trace(sub: Subparsers) -> None:
    tr = sub.add_parser("trace", help="leasehold traces (docs/workloads.md)")
    tr_sub = tr.add_subparsers(dest="trace_command", required=True, metavar="COMMAND")
    conv = tr_sub.add_parser("convert", help="a scenario as a trace (.jsonl), or a trace as a"
                             " scenario (YAML)")
    conv.add_argument("input", help="scenario YAML, or trace (.jsonl, .jsonl.gz)")
    conv.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    conv.set_defaults(func=cmd_trace_convert)
    exp = tr_sub.add_parser("export", help="the Leases of a cluster (as the operator"
                            " scheduled them, with what it did) and its NodePools, as a"
                            " trace (.jsonl) that `simulate` and `whatif` replay")
    exp.add_argument("--kubeconfig", help="the cluster's kubeconfig (default: $KUBECONFIG,"
                     " then ~/.kube/config, as the operator)")
    exp.add_argument("--namespace", "-n", help="only the Leases of this namespace (default:"
                     " all namespaces)")
    exp.add_argument("--out", metavar="FILE", help="write to FILE (.jsonl, or .jsonl.gz:"
                     " gzipped) instead of stdout")
    exp.set_defaults(func=cmd_trace_export, extra="export")  # the official client


def add_whatif(sub: Subparsers) -> None:
    wi = sub.add_parser("whatif", help="replay a trace (`trace export`'s) under several"
                        " policies and compare with what the cluster did: one report")
    wi.add_argument("trace", help="a leasehold trace (.jsonl, .jsonl.gz) whose header names"
                    " its cluster; its observed lines are the baseline")
    wi.add_argument("--policy", default="moml", metavar="LIST",
                    help=f"comma-separated preemption policies ({', '.join(POLICIES)};"
                         " default: moml)")
    wi.add_argument("--backfilling", default=BACKFILLING[0], metavar="LIST",
                    help=f"comma-separated backfilling modes ({', '.join(BACKFILLING)};"
                         f" default: {BACKFILLING[0]})")
    wi.add_argument("--dispatch", default=DISPATCH[0], metavar="LIST",
                    help=f"comma-separated dispatch strategies ({', '.join(DISPATCH)};"
                         f" default: {DISPATCH[0]})")
    wi.add_argument("--out", metavar="DIR", help="the report's directory (default:"
                    " whatif-<trace name> beside the trace)")
    wi.add_argument("--quiet", action="store_true", help="no progress bars")
    wi.set_defaults(func=cmd_whatif, extra="sim")  # its report: matplotlib


def add_swf(sub: Subparsers) -> None:
    swf = sub.add_parser("swf", help="replay a Standard Workload Format trace and print waits")
    swf.add_argument("trace", help="SWF file (.swf or .swf.gz)")
    swf.add_argument("--nodes", type=int, default=144, help="nodes in the pool (default: 144)")
    swf.add_argument("--backfilling", nargs="+", choices=BACKFILLING, default=list(BACKFILLING),
                     help="modes to compare (default: all)")
    swf.add_argument("--inject", metavar="LWF",
                     help="a Haizea LWF file whose advance reservations join the trace's"
                          " jobs, as in seed 004 (shared/data has 72)")
    swf.add_argument("--skip-bad-lines", action="store_true",
                     help="leave malformed lines out (with a warning) instead of stopping")
    swf.add_argument("--suspend-before-blocking", action="store_true",
                     help="run a waiting job in the hole before a reservation and suspend"
                          " it for the reservation (004's suspend/resume; docs/semantics.md);"
                          " prints how many jobs were suspended")
    swf.set_defaults(func=cmd_swf)


def add_up(sub: Subparsers) -> None:
    upp = sub.add_parser("up", help="the emulated cluster, the operator and its metrics, in"
                         " one foreground command")
    upp.add_argument("--port", type=int, default=6443, help="API server port (default: 6443;"
                     " 0 picks a free one)")
    upp.add_argument("--data", default="~/.leasehold/cluster",
                     help="data directory (default: ~/.leasehold/cluster)")
    upp.add_argument("--time-scale", type=positive, default=1.0,
                     help="emulated seconds per real second (default: 1)")
    upp.add_argument("--policy", choices=POLICIES, default="moml",
                     help="preemption policy (default: moml)")
    upp.add_argument("--dispatch", choices=DISPATCH, default=DISPATCH[0],
                     help="how the operator sends an external Lease that names no NodePool"
                          f" to one (default: {DISPATCH[0]})")
    upp.add_argument("--metrics-port", type=int, default=8080,
                     help="the operator's /metrics port (default: 8080; 0: off)")
    upp.add_argument("--pools", metavar="FILE", help="NodePool manifests (default: a pool"
                     " of 4 emulated nodes with 4 cpus and 8Gi, on a new data directory)")
    upp.add_argument("--local-namespace", action="append", metavar="NAMESPACE",
                     help="a namespace the operator takes for local, repeatable (default:"
                          " owners, the testbed's; the operator's --local-namespace)")
    upp.set_defaults(func=cmd_up, extra="emulator")  # it runs `emulator up`


def add_demo(sub: Subparsers) -> None:
    demo = sub.add_parser("demo", help="the MOML paper's testbed on the embedded emulated"
                          " cluster, under each policy (what `make demo` runs)")
    demo.add_argument("--time-scale", type=positive, default=300.0,
                      help="emulated seconds per real second (default: 300)")
    demo.add_argument("--policies", nargs="+", choices=POLICIES,
                      default=["nop", "mlip", "mov", "moml"], help="(default: nop mlip mov moml)")
    demo.set_defaults(func=cmd_demo, extra="emulator")  # it runs `emulator up`


def add_emulator(sub: Subparsers) -> None:
    em = sub.add_parser("emulator", help="an emulated Kubernetes cluster, no Docker needed")
    em_sub = em.add_subparsers(dest="emulator_command", required=True, metavar="COMMAND")
    data_help = "the cluster's data directory (default: ~/.leasehold/cluster)"
    em_up = em_sub.add_parser("up", help="start the API server in the foreground")
    em_up.add_argument("--port", type=int, default=6443, help="port on 127.0.0.1 (default:"
                       " 6443; 0 picks a free one)")
    em_up.add_argument("--data", default="~/.leasehold/cluster", help=data_help)
    em_up.add_argument("--time-scale", type=positive, default=1.0,
                       help="emulated seconds per real second (default: 1)")
    em_up.add_argument("--pools", metavar="FILE", help="NodePool manifests (YAML) to create;"
                       " their `emulated` blocks become nodes")
    em_up.add_argument("--max-body", type=count, default=3 << 20, metavar="BYTES",
                       help="the largest request body accepted (default: 3 MiB, as a real"
                            " server)")
    em_up.add_argument("--event-ttl", type=positive, default=3600.0, metavar="SECONDS",
                       help="events go this long after their last write (real seconds;"
                            " default: 3600, as kube-apiserver's --event-ttl)")
    em_up.add_argument("--no-nodes", action="store_true", help="the API server only (run"
                       " `leasehold emulator nodes` separately)")
    # the server's certificate (client-go sends a token only over TLS)
    em_up.set_defaults(extra="emulator")
    em_nodes = em_sub.add_parser("nodes", help="only the emulated nodes, against any cluster")
    em_nodes.add_argument("--kubeconfig", help="the cluster's kubeconfig (default:"
                          " $KUBECONFIG, then ~/.kube/config)")
    em_nodes.add_argument("--time-scale", type=positive, default=None,
                          help="emulated seconds per real second (default: the cluster's"
                               " leasehold-clock ConfigMap, else 1)")
    em_token = em_sub.add_parser(
        "token", help="a new bearer token for a user or a service account (who then has"
        " the rights RBAC bindings give them; the admin token has all)")
    em_token.add_argument("--data", default="~/.leasehold/cluster", help=data_help)
    who = em_token.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="the user name the token authenticates as")
    who.add_argument("--service-account", metavar="NAMESPACE/NAME",
                     help="authenticate as this service account"
                          " (system:serviceaccount:NAMESPACE:NAME)")
    em_token.add_argument("--group", action="append", help="a group of the --user"
                          " (repeatable)")
    em_token.add_argument("--kubeconfig", metavar="FILE", help="write a kubeconfig that"
                          " uses the token (else print the token)")
    em_token.set_defaults(extra="emulator")
    for name, text in (("down", "stop the running server"),
                       ("status", "where the server runs and whether it answers")):
        em_cmd = em_sub.add_parser(name, help=text)
        em_cmd.add_argument("--data", default="~/.leasehold/cluster", help=data_help)
        em_cmd.set_defaults(extra="emulator")
    em.set_defaults(func=cmd_emulator)


def add_workload(sub: Subparsers) -> None:
    wl = sub.add_parser("workload", help="generate a synthetic workload as an SWF trace")
    wl.add_argument("model", choices=tuple(WORKLOAD_PRESETS),
                    help="lublin99: Lublin and Feitelson's model, as m_lublin99.c generates"
                         " it; das2: the DAS-2 model of seed 003")
    wl.add_argument("--jobs", type=count, default=1000, help="number of jobs (default: 1000)")
    wl.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    wl.add_argument("--rng", choices=("numpy", "drand48"), default="numpy",
                    help="numpy's PCG64 (default), or the C program's drand48 stream"
                         " (lublin99 only): then a seed gives exactly the jobs m_lublin99.c"
                         " prints for it")
    wl.add_argument("--preset", metavar="NAME",
                    help="lublin99: program (default; m_lublin99.c's batch and interactive"
                         " jobs on 128 nodes), typeless, papers (seeds 000/001: 3,000 jobs in"
                         " about two weeks on 32 nodes, 4 VMs and 2 h on average); das2:"
                         " gridsim (default), c64, c128, c256 (seed 003's clusters), grid"
                         " (003's external requests)")
    wl.add_argument("--out", metavar="FILE", help="write the trace to FILE instead of stdout")
    wl.set_defaults(func=cmd_workload)


def add_experiment(sub: Subparsers) -> None:
    ex = sub.add_parser("experiment", help="run an experiment file: grid, policies, replications")
    ex_sub = ex.add_subparsers(dest="action", required=True, metavar="ACTION")
    ex_run = ex_sub.add_parser("run", help="run what is missing, then write the report")
    ex_run.add_argument("file", help="experiment YAML (see examples/experiments/)")
    ex_run.add_argument("--out", metavar="DIR",
                        help="results directory (default: results-<name> beside the file)")
    where = ex_run.add_mutually_exclusive_group()
    where.add_argument("--processes", type=count,
                       help="local worker processes (default: one per CPU)")
    where.add_argument("--cluster", metavar="ADDRESS",
                       help="run the units on a Dask distributed cluster: its scheduler's"
                            " address (tcp://HOST:8786), or local:N for a Dask LocalCluster"
                            " of N local worker processes (local: one per CPU); needs the"
                            " extra dask, and leasehold on the workers (docs/experiments.md)")
    ex_run.add_argument("--quiet", action="store_true", help="no progress bar")
    ex_run.set_defaults(func=cmd_experiment, extra="sim")  # its report: scipy, matplotlib
    ex_t1 = ex_sub.add_parser("table-i", help="000 Table I from the sweeps' results:"
                              " leasehold's interval beside the paper's, and whether they"
                              " overlap")
    ex_t1.add_argument("files", nargs="+", metavar="FILE",
                       help="an experiment YAML reproducing a row (000-best-effort,"
                            " 000-deadline, 000-local, 001-vms); its results are read from"
                            " results-<name> beside it")
    ex_t1.add_argument("--out", metavar="FILE", help="write the table to FILE instead of stdout")
    ex_t1.set_defaults(func=cmd_table_i, extra="sim")
