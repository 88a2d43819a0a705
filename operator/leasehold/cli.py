"""The `leasehold` command.

The operator's own commands (``operator``, ``crds``, ``dashboards``) are here; the
simulator's and the emulated cluster's come from the emulator package, found by
their entry points (:mod:`leasehold.commands`). The operator package never imports
them, and the extras they need are not the operator's (the image installs none).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .commands import (
    BACKFILLING,
    DISPATCH,
    GROUP,
    POLICIES,
    AddCommand,
    Subparsers,
    extra_of,
    fail,
    missing,
    needs,
)
from .core.model import SUSPENSION_NAMES

if TYPE_CHECKING:
    from .api.tenancy import Tenancy
    from .core.model import SchedulerConfig

#: the order ``leasehold --help`` lists the commands in; a contributed command not
#: named here comes after these, by name
HELP_ORDER = ("simulate", "trace", "whatif", "swf", "operator", "up", "demo", "crds",
              "dashboards", "emulator", "workload", "experiment")

def _config_data(args: argparse.Namespace) -> Any:
    """The ``--config`` file's data ({} without one). Raises ValueError with the file
    and what is wrong."""
    import yaml

    from .api.scenario import load_yaml, yaml_problem

    if not args.config:
        return {}
    try:
        # duplicate keys refused, as in scenarios: the second would win unseen
        data = load_yaml(Path(args.config).read_text()) or {}
    except OSError as exc:
        raise ValueError(f"--config: cannot read {args.config}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(yaml_problem(args.config, exc)) from None
    if not isinstance(data, dict):
        raise ValueError(f"{args.config}: a mapping of configuration keys, got"
                         f" {type(data).__name__}")
    return data


def operator_config(args: argparse.Namespace) -> SchedulerConfig:
    """The scheduler configuration: ``--config`` (a scenario's ``config`` block, what
    the Helm chart mounts, and the operator's own ``tenancy`` block), with each flag
    given on the command line over it. Raises ValueError with the file, field and
    what is wrong."""
    from pydantic import ValidationError

    from .api.scenario import ConfigSpec, parse_alpha, validation_problems
    from .core.model import Backfilling, SchedulerConfig

    data = {k: v for k, v in _config_data(args).items() if k != TENANCY}
    try:
        spec = ConfigSpec.model_validate(data)
    except ValidationError as exc:
        raise ValueError("\n".join(f"{args.config}: {p}" for p in validation_problems(
            exc, ("config",)))) from None
    if spec.utility is not None:  # a scenario's, which the operator would not read
        raise ValueError(f"{args.config}: utility: the utility mode (seed 002) runs in the"
                         " simulator only (leasehold simulate); drop it from the operator's"
                         " configuration")
    try:
        alpha = parse_alpha(args.alpha) if args.alpha is not None else spec.alpha
    except ValueError as exc:
        raise ValueError(f"--alpha: {exc}") from None
    return SchedulerConfig(
        policy=args.policy or spec.policy, alpha=alpha,
        backfilling=Backfilling(args.backfilling) if args.backfilling else spec.backfilling,
        suspend_before_blocking=spec.suspend_before_blocking,
        dispatch=args.dispatch or spec.dispatch, dispatch_seed=spec.dispatch_seed,
        suspension=args.suspension or spec.suspension)


#: the key of the operator's own block in ``--config`` (not a scenario's)
TENANCY = "tenancy"


def operator_tenancy(args: argparse.Namespace) -> Tenancy:
    """The ``tenancy`` block of ``--config``, with ``--local-namespace`` added to its
    local namespaces. Raises ValueError with the file, field and what is wrong."""
    from pydantic import ValidationError

    from .api.scenario import validation_problems
    from .api.tenancy import Tenancy

    block = _config_data(args).get(TENANCY) or {}
    if not isinstance(block, dict):
        raise ValueError(f"{args.config}: {TENANCY}: a mapping, got {type(block).__name__}")
    where = args.config or "--local-namespace"
    try:
        tenancy = Tenancy.model_validate(block)
        if args.local_namespace:
            tenancy = tenancy.model_copy(update={"local_namespaces": [
                *tenancy.local_namespaces, *args.local_namespace]})
            Tenancy.model_validate(tenancy.model_dump(by_alias=True))  # the names checked
    except ValidationError as exc:
        raise ValueError("\n".join(f"{where}: {TENANCY}.{p}" for p in validation_problems(
            exc, ("config", TENANCY)))) from None
    return tenancy


def cmd_operator(args: argparse.Namespace) -> int:
    """Run the Kopf operator against the cluster of a kubeconfig."""
    from .kube import handlers

    try:
        config = operator_config(args)
        tenancy = operator_tenancy(args)
    except ValueError as exc:
        return fail(str(exc).splitlines())
    peering = None
    if args.peering is not None:
        if args.peering_lifetime < 2:
            return fail([f"--peering-lifetime: at least 2 seconds, got {args.peering_lifetime}"])
        peering = handlers.PeeringOptions(args.peering, lifetime=args.peering_lifetime)
        if args.priority is not None:
            peering = replace(peering, priority=args.priority)
    if (args.metrics_cert is None) != (args.metrics_key is None):
        return fail(["--metrics-cert and --metrics-key: give both (HTTPS) or neither"
                     " (HTTP)"])
    metrics = handlers.MetricsOptions(args.metrics_address, args.metrics_port,
                                      args.metrics_cert, args.metrics_key) \
        if args.metrics_port else None
    window = handlers.BATCH_WINDOW if args.batch_window is None else args.batch_window
    if not 0 <= window <= 60:
        return fail([f"--batch-window: from 0 to 60 seconds, got {args.batch_window:g}"])
    try:
        handlers.run(config, args.kubeconfig, metrics, peering,
                     handlers.JournalOptions(args.journal_namespace,
                                             args.journal_snapshot_every), tenancy, window)
    except ValueError as exc:  # a kubeconfig, metrics address or certificate it cannot use
        return fail([str(exc)])
    return 0


def _write_files(files: dict[str, str], directories: list[str]) -> int:
    """Write ``files`` (name -> text) into each directory, printing each path."""
    for directory in directories:
        out = Path(directory)
        try:
            out.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (out / name).write_text(text, encoding="utf-8")
                print(out / name)
        except OSError as exc:
            return fail([f"cannot write {out}: {exc.strerror or exc}"])
    return 0


def cmd_crds(args: argparse.Namespace) -> int:
    """Write the CRDs generated from the API models (into crds/ by default)."""
    from .api.crds import crds, render

    return _write_files({name: render(m) for name, m in crds().items()},
                        args.out or ["crds"])


def cmd_dashboards(args: argparse.Namespace) -> int:
    """Write the Grafana dashboards and the Prometheus alert rules."""
    from .observe import alerts, dashboards

    boards = {name: dashboards.render(b) for name, b in dashboards.dashboards().items()}
    rules = {"leasehold.rules.yaml": alerts.render()}
    return _write_files(boards, args.out or ["grafana"]) \
        or _write_files(rules, args.rules or ["prometheus"])


def add_operator(sub: Subparsers) -> None:
    op = sub.add_parser("operator", help="run the operator against a cluster (KUBECONFIG)")
    op.add_argument("--kubeconfig", help="the cluster's kubeconfig (default: $KUBECONFIG)")
    op.add_argument("--config", metavar="FILE",
                    help="configuration: YAML with a scenario's config keys"
                         " (policy, alpha, backfilling, suspendBeforeBlocking,"
                         " suspension), the dispatch strategy and a tenancy block"
                         " (docs/operator.md);"
                         " flags given here win over it")
    op.add_argument("--policy", choices=POLICIES,
                    help="preemption policy (default: the config's, else moml)")
    op.add_argument("--backfilling", choices=BACKFILLING,
                    help="backfilling mode (default: the config's, else conservative)")
    op.add_argument("--alpha", help="MOML's threshold (default: the config's, else median)")
    op.add_argument("--dispatch", choices=DISPATCH,
                    help="how an external Lease that names no NodePool gets one (default:"
                         f" the config's, else {DISPATCH[0]})")
    op.add_argument("--suspension", choices=SUSPENSION_NAMES,
                    help="what a best-effort lease that must give way undergoes: all, it is"
                         " preempted by its type (suspended); none, it is cancelled and"
                         " re-queued to run again from the start (default: the config's,"
                         " else all)")
    op.add_argument("--metrics-port", type=int, default=8080, metavar="PORT",
                    help="serve /metrics and /healthz on PORT (default: 8080; 0: off)")
    op.add_argument("--metrics-address", default="127.0.0.1", metavar="ADDRESS",
                    help="the address /metrics binds (default: 127.0.0.1, this machine"
                         " only; the chart gives the pod's IP)")
    op.add_argument("--metrics-cert", metavar="FILE",
                    help="serve /metrics over HTTPS with this PEM certificate (chain)")
    op.add_argument("--metrics-key", metavar="FILE",
                    help="the private key (PEM) of --metrics-cert")
    op.add_argument("--local-namespace", action="append", metavar="NAMESPACE",
                    help="a namespace whose Leases are local, repeatable; added to the"
                         " config's tenancy.localNamespaces (default: none, all external)")
    op.add_argument("--journal-namespace", metavar="NAMESPACE",
                    help="where the operator keeps its journal (ConfigMaps no tenant may"
                         " write; default: the pod's namespace, else leasehold-system,"
                         " made if missing)")
    op.add_argument("--journal-snapshot-every", type=int, default=None, metavar="INPUTS",
                    help="a snapshot of the journal every INPUTS inputs (default: 500)")
    op.add_argument("--batch-window", type=float, default=None, metavar="SECONDS",
                    help="while inputs keep coming, a step begins at least SECONDS after"
                         " the one before, so that a burst is decided in a few steps (an"
                         " input after a quiet spell is decided at once; default: 0.1;"
                         " 0: each step as soon as the last one ends)")
    op.add_argument("--peering", nargs="?", const="leasehold", metavar="NAME",
                    help="run as one of several replicas sharing the ClusterKopfPeering NAME"
                         " (default name: leasehold); one schedules, the others stand by")
    op.add_argument("--priority", type=int, help="with --peering: the highest live priority"
                    " is active (default: earlier start wins)")
    op.add_argument("--peering-lifetime", type=int, default=60, metavar="SECONDS",
                    help="with --peering: seconds without a keep-alive before a replica is"
                         " taken for gone and another takes over (default: 60)")
    op.set_defaults(func=cmd_operator)


def add_crds(sub: Subparsers) -> None:
    crd = sub.add_parser("crds", help="write the Lease and NodePool CRDs, generated from the"
                         " API models")
    crd.add_argument("--out", action="append", metavar="DIR",
                     help="directory, repeatable (default: crds)")
    crd.set_defaults(func=cmd_crds)


def add_dashboards(sub: Subparsers) -> None:
    dash = sub.add_parser("dashboards", help="write the Grafana dashboards and the"
                          " Prometheus alert rules, generated from code")
    dash.add_argument("--out", action="append", metavar="DIR",
                      help="directory of the dashboards, repeatable (default: grafana)")
    dash.add_argument("--rules", action="append", metavar="DIR",
                      help="directory of leasehold.rules.yaml, repeatable (default:"
                           " prometheus)")
    dash.set_defaults(func=cmd_dashboards)


def _unavailable(name: str, why: str) -> AddCommand:
    """A command whose entry point cannot be loaded: run, it says ``why`` (one line)."""
    def add(sub: Subparsers) -> None:
        cmd = sub.add_parser(name, help="(cannot be loaded: run it to see why)",
                             add_help=False)
        cmd.add_argument("args", nargs=argparse.REMAINDER)
        cmd.set_defaults(func=lambda args: fail([why]))
    return add


def commands() -> dict[str, AddCommand]:
    """Every command, in the order ``--help`` lists them: the operator's own, and
    those other packages contribute (:data:`~leasehold.commands.GROUP`)."""
    found: dict[str, AddCommand] = {"operator": add_operator, "crds": add_crds,
                                    "dashboards": add_dashboards}
    for point in entry_points(group=GROUP):
        if point.name in found:
            continue  # the operator's own, or a second distribution's: the first wins
        try:
            found[point.name] = point.load()
        except ImportError as exc:
            extra = extra_of(exc.name or "")
            why = needs(point.name, extra, [exc.name or ""]) if extra else \
                f"leasehold {point.name}: cannot load {point.value}: {exc}"
            found[point.name] = _unavailable(point.name, why)

    def rank(name: str) -> tuple[int, str]:
        return (HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER), name)
    return {name: found[name] for name in sorted(found, key=rank)}


def distribution_version() -> str:
    """The installed distribution's version (pyproject's, through the package
    metadata): what a bug report needs to name."""
    try:
        return version("leasehold")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leasehold",
        description="Lease scheduling for shared Kubernetes clusters.",
    )
    parser.add_argument("-V", "--version", action="version",
                        version=f"%(prog)s {distribution_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in commands().values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # a command that needs an extra says so in one line, before it starts anything
    extra = getattr(args, "extra", None)
    if extra is not None and (gone := missing(extra)):
        return fail([needs(args.command, extra, gone)])
    try:
        return int(args.func(args))
    except ModuleNotFoundError as exc:
        extra = extra_of(exc.name or "")
        if extra is None:
            raise
        return fail([needs(args.command, extra, [exc.name or ""])])


if __name__ == "__main__":
    sys.exit(main())
