"""Scenario files: loading, one problem line per problem, conversion for the core."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.api.scenario import (
    YAML_LOADER,
    YAML_LOADERS,
    LoaderClass,
    Scenario,
    ScenarioError,
    load_scenario,
    load_yaml,
    parse_alpha,
    parse_scenario,
    validate_scenario,
    yaml_problem,
)
from leasehold.core.model import (
    Backfilling,
    NodeGroup,
    OverheadParams,
    PoolSpec,
    SchedulerConfig,
    Shape,
)

# The example of DESIGN §8, verbatim: it must always load.
DESIGN_EXAMPLE = """\
cluster:
  pools:
    - name: rp1
      nodes: 3
      cpu: 4            # cores per node
      memory: 4096      # MiB per node
      overhead:         # optional, defaults of §2.4
        suspendRate: 6.36      # MB/s (B)
        resumeRate: 8.12       # MB/s (r)
        bandwidth: 6.39        # MB/s (b, migration copy)
        pauseSeconds: 0.005    # t_p
        rescheduleSeconds: 2.3 # δ
        stopSeconds: 0
config:
  policy: moml          # nop | mlip | mov | moml | kueue | kube-scheduler | haizea
  alpha: median
  backfilling: conservative   # conservative | easy
  suspendBeforeBlocking: false
leases:                 # times in seconds from 0, or durations like "2h", "5m"
  - name: "1"
    origin: external    # local | external
    type: BestEffortSuspendable
    arrival: 0          # submission time
    vms: 3
    cpu: 1              # per VM
    memory: 256         # MiB per VM
    duration: 3600
"""


def lease(name: str = "a", **fields: Any) -> dict[str, Any]:
    """A valid raw best-effort lease; ``None`` removes a field."""
    data: dict[str, Any] = {
        "name": name,
        "type": "BestEffortCancellable",
        "vms": 1,
        "duration": 3600,
    }
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


def pool(name: str = "rp1", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "nodes": 2, "cpu": 4, "memory": 4096}
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


def scenario(
    *leases: dict[str, Any],
    pools: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {"cluster": {"pools": [pool()] if pools is None else pools}}
    if config is not None:
        data["config"] = config
    data["leases"] = list(leases)
    return data


def write(tmp_path: Path, content: dict[str, Any] | str) -> Path:
    path = tmp_path / "scenario.yaml"
    text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as excinfo:
        load_scenario(path)
    return excinfo.value.problems


# ---- one problem, one line ---------------------------------------------------------

TYPES = (
    "BestEffortCancellable, BestEffortSuspendable, DeadlineMigratable, "
    "DeadlineNonPreemptable, AdvanceReservation"
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            scenario(lease("a", duration=None)),
            'leases[0] (name "a"): duration: required field is missing',
            id="missing-field",
        ),
        pytest.param(
            scenario(lease("a", type="Foo")),
            f'leases[0] (name "a"): type: unknown lease type "Foo"; expected one of {TYPES}',
            id="unknown-type",
        ),
        pytest.param(
            scenario(lease("a", type="bestEffortCancellable")),
            '(did you mean "BestEffortCancellable"?)',
            id="type-case-typo",
        ),
        pytest.param(
            scenario(lease("a", type=3)),
            f'leases[0] (name "a"): type: must be one of {TYPES}, got 3',
            id="type-not-a-string",
        ),
        pytest.param(
            scenario(lease("")),
            "leases[0]: name: must not be empty",
            id="empty-name",
        ),
        pytest.param(
            scenario(lease("6"), lease("7", vms=-3)),
            'leases[1] (name "7"): vms: must be >= 1, got -3',
            id="negative-vms",
        ),
        pytest.param(
            scenario(lease("b", type="DeadlineMigratable", ready=0, deadline=3000)),
            'leases[0] (name "b"): deadline: 3000s is before ready + duration (0s + 3600s = 3600s)',
            id="deadline-before-ready-plus-duration",
        ),
        pytest.param(
            scenario(lease("a", pool="rp9")),
            'leases[0] (name "a"): pool: unknown pool "rp9"; expected one of rp1',
            id="unknown-pool",
        ),
        pytest.param(
            scenario(lease("a"), lease("b"), lease("a")),
            'leases[2] (name "a"): name: duplicate lease name "a" (first used by leases[0])',
            id="duplicate-lease-names",
        ),
        pytest.param(
            scenario(lease("a"), pools=[pool("rp1"), pool("rp1")]),
            'cluster.pools[1] (name "rp1"): name: duplicate pool name "rp1" '
            "(first used by cluster.pools[0])",
            id="duplicate-pool-names",
        ),
        pytest.param(
            scenario(lease("a", vm=2)),
            'leases[0] (name "a"): vm: unknown field; expected one of name, origin, type, '
            "arrival, vms, replicas, cpu, memory, extended, duration, ready, deadline, start, "
            'runtime, pool, image, imageSizeMB (did you mean "vms"?)',
            id="unknown-lease-field",
        ),
        pytest.param(
            scenario(lease("a", origin="local")),
            'leases[0] (name "a"): type: a local lease must be DeadlineNonPreemptable or '
            "AdvanceReservation",
            id="local-best-effort",
        ),
        pytest.param(
            scenario(lease("a", duration="1x")),
            'leases[0] (name "a"): duration: invalid duration "1x"',
            id="malformed-duration",
        ),
        pytest.param(
            scenario(lease("a", cpu=8)),
            'leases[0] (name "a"): cpu: one VM needs 8 cores but the largest node '
            '(pool "rp1") has 4 cores',
            id="cpu-never-fits",
        ),
        pytest.param(
            scenario(lease("a", memory="8Gi", pool="rp1")),
            'leases[0] (name "a"): memory: one VM needs 8192Mi but a node of pool "rp1" has 4096Mi',
            id="memory-never-fits-named-pool",
        ),
        pytest.param(
            scenario(
                lease("a", cpu=4, memory=8192),
                pools=[pool("big-cpu", cpu=4, memory=1024), pool("big-mem", cpu=1, memory=8192)],
            ),
            'leases[0] (name "a"): cpu: one VM needs 4 cores and 8192Mi but no pool has a '
            "node with both",
            id="no-node-has-both",
        ),
        pytest.param(
            scenario(lease("a", cpu=8, pool="small"), pools=[pool("small"), pool("big", cpu=8)]),
            'leases[0] (name "a"): cpu: one VM needs 8 cores but a node of pool "small" has '
            "4 cores",
            id="fits-elsewhere-but-not-in-named-pool",
        ),
        pytest.param(
            scenario(lease("a"), pools=[pool(nodes=0)]),
            'cluster.pools[0] (name "rp1"): nodes: must be >= 1, got 0',
            id="pool-without-nodes",
        ),
        pytest.param(
            scenario(lease("a"), pools=[pool(overhead={"suspendRate": 0})]),
            'cluster.pools[0] (name "rp1"): overhead.suspendRate: must be > 0, got 0',
            id="overhead-rate-zero",
        ),
        pytest.param(
            scenario(lease("a"), pools=[pool(overhead={"pauseSeconds": float("inf")})]),
            'cluster.pools[0] (name "rp1"): overhead.pauseSeconds: must be a finite number, '
            "got inf",
            id="overhead-infinite",
        ),
        pytest.param(
            scenario(lease("a"), pools=[]),
            "cluster: pools: must not be empty",
            id="no-pools",
        ),
        pytest.param(
            scenario(lease("a"), config={"policy": "momll"}),
            'config: policy: unknown policy "momll"; expected one of nop, mlip, mov, moml, '
            'kueue, kube-scheduler, haizea (did you mean "moml"?)',
            id="unknown-policy",
        ),
        pytest.param(
            scenario(lease("a"), config={"backfilling": "aggressive"}),
            'config: backfilling: unknown backfilling "aggressive"; expected one of '
            "conservative, easy, none",
            id="unknown-backfilling",
        ),
        pytest.param(
            scenario(lease("a"), config={"alpha": "p101"}),
            'config: alpha: percentile must be between p0 and p100, got "p101"',
            id="alpha-out-of-range",
        ),
        pytest.param(
            scenario(lease("a"), config={"suspendBeforeBlocking": "yes please"}),
            'config: suspendBeforeBlocking: must be true or false, got "yes please"',
            id="not-a-bool",
        ),
        pytest.param(
            {"cluster": {"pools": [pool()]}},
            "leases: required field is missing",
            id="missing-section",
        ),
        pytest.param(
            {**scenario(lease("a")), "lease": []},
            "lease: unknown field; expected one of cluster, config, leases "
            '(did you mean "leases"?)',
            id="unknown-section",
        ),
        pytest.param(
            scenario(lease("a"), "oops"),  # type: ignore[arg-type]
            'leases[1]: must be a mapping, got "oops"',
            id="lease-not-a-mapping",
        ),
    ],
)
def test_each_problem_is_one_line(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    path = write(tmp_path, data)
    found = problems(path)
    assert len(found) == 1, found
    assert found[0].startswith(f"{path}: "), found[0]
    assert expected in found[0]


def test_error_line_format_is_exact(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
cluster:
  pools:
    - name: rp1
      nodes: 1
leases:
  - name: "6"
    type: BestEffortCancellable
    vms: 1
    duration: 10
  - name: "7"
    type: BestEffortCancellable
    vms: -3
    duration: 10
""",
    )
    assert problems(path) == [f'{path}: leases[1] (name "7"): vms: must be >= 1, got -3 (line 12)']


def test_missing_field_points_at_the_lease(tmp_path: Path) -> None:
    text = "cluster:\n  pools: [{name: rp1, nodes: 1}]\nleases:\n  - name: a\n    vms: 1\n"
    found = problems(write(tmp_path, text))
    assert [re.sub(r"^.*?: ", "", line, count=1) for line in found] == [
        'leases[0] (name "a"): type: required field is missing (line 4)',
        'leases[0] (name "a"): duration: required field is missing (line 4)',
    ]


def test_all_problems_are_collected_in_file_order(tmp_path: Path) -> None:
    data = scenario(
        lease("a", type="Foo"),
        lease("b", vms=0),
        lease("c", type="DeadlineMigratable", deadline=100),
        lease("d", pool="nowhere"),
        lease("b"),
    )
    found = problems(write(tmp_path, data))
    assert len(found) == 5, found
    for line, (index, name, field) in zip(
        found,
        [
            (0, "a", "type"),
            (1, "b", "vms"),
            (2, "c", "deadline"),
            (3, "d", "pool"),
            (4, "b", "name"),
        ],
        strict=True,
    ):
        assert f'leases[{index}] (name "{name}"): {field}: ' in line


def test_a_lease_without_a_name_is_still_located(tmp_path: Path) -> None:
    found = problems(write(tmp_path, scenario(lease(None, vms=0))))  # type: ignore[arg-type]
    assert len(found) == 2
    assert any(": leases[0]: name: required field is missing" in line for line in found)
    assert any(": leases[0]: vms: must be >= 1, got 0" in line for line in found)


def test_numeric_names_are_shown_as_written(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster: {pools: [{name: p, nodes: 1}]}\nleases: [{name: 7, vms: 1}]")
    assert all('leases[0] (name "7"): ' in line for line in problems(path))


# ---- file-level problems --------------------------------------------------------------


FILE_LEVEL_PROBLEMS = [
    pytest.param(
        "cluster:\n  pools: []\nleases:\n  - name: a\n    vms: 1: 2\n",
        r"invalid YAML: mapping values are not allowed here \(line 5, column 11\)$",
        id="syntax",
    ),
    pytest.param(
        "cluster:\n  pools: []\n\tleases: []\n",
        r"invalid YAML: .*indent with spaces, not tabs \(line 3, column 1\)$",
        id="tab",
    ),
    pytest.param(
        "leases: []\nleases: []\n",
        r'invalid YAML: duplicate key "leases" \(first at line 1\) \(line 2, column 1\)$',
        id="duplicate-key",
    ),
    pytest.param("", r"file is empty; expected a mapping", id="empty"),
    pytest.param("# nothing\n", r"file is empty; expected a mapping", id="only-comments"),
    pytest.param("- a\n- b\n", r"expected a mapping .* got a list$", id="list"),
    pytest.param("42\n", r"expected a mapping .* got 42$", id="scalar"),
    pytest.param("a: 1\n---\nb: 2\n", r"but found another document", id="two-documents"),
]


@pytest.mark.parametrize(("text", "expected"), FILE_LEVEL_PROBLEMS)
def test_file_level_problem(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    found = problems(path)
    assert len(found) == 1, found
    assert found[0].startswith(f"{path}: ")
    assert re.search(expected, found[0]), found[0]


LOADERS = [pytest.param(loader, id=loader.__name__) for loader in YAML_LOADERS]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_yaml_is_read_by_libyaml() -> None:
    """The pure-Python loader spent 2 of `leasehold simulate`'s 3 CPU-s on a 5,108-lease
    scenario (issue 20); libyaml's parser reads it about 4x faster."""
    assert issubclass(YAML_LOADER, yaml.CSafeLoader)
    pure, fast = YAML_LOADERS
    assert issubclass(pure, yaml.SafeLoader) and not issubclass(pure, yaml.CSafeLoader)
    assert fast is YAML_LOADER


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(("text", "expected"), FILE_LEVEL_PROBLEMS)
def test_file_level_problem_under_each_loader(
    loader: LoaderClass, text: str, expected: str
) -> None:
    """libyaml words syntax errors its own way ("found character that cannot start any
    token" for a tab): a file it refuses is read again by the pure-Python loader, so
    the messages are PyYAML's under either."""
    with pytest.raises(ScenarioError) as excinfo:
        parse_scenario(text, "s.yaml", loader=loader)
    [found] = excinfo.value.problems
    assert found.startswith("s.yaml: ")
    assert re.search(expected, found), found


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a: 1\nb: 2\na: 3\n",
                     'duplicate key "a" (first at line 1) (line 3, column 1)', id="top-level"),
        pytest.param("x:\n  - {p: 1, q: 2}\n  - {q: 3,  q: 4}\n",
                     'duplicate key "q" (first at line 3) (line 3, column 13)', id="flow"),
        pytest.param("x:\n  y:\n    7: a\n    '7': b\n    7: c\n",
                     'duplicate key 7 (first at line 3) (line 5, column 5)', id="nested-int"),
    ],
)
def test_duplicate_keys_are_refused_under_each_loader(
    loader: LoaderClass, text: str, expected: str
) -> None:
    with pytest.raises(yaml.YAMLError) as excinfo:
        load_yaml(text, loader=loader)
    assert yaml_problem("c.yaml", excinfo.value) == f"c.yaml: invalid YAML: {expected}"


@pytest.mark.parametrize("loader", LOADERS)
def test_problem_lines_are_the_same_under_each_loader(loader: LoaderClass) -> None:
    text = (
        "# a comment first\n"
        "cluster:\n"
        "  pools:\n"
        "    - {name: rp1, nodes: 1}\n"
        "leases:\n"
        "  - name: a\n"
        "    type: BestEffortCancellable\n"
        "    vms: 1\n"
        "    duration: 10\n"
        "  - {name: b, type: BestEffortCancellable, vms: 0, duration: 10}\n"
        "  - name: c\n"
        "    vms: 1\n"
    )
    with pytest.raises(ScenarioError) as excinfo:
        parse_scenario(text, "s.yaml", loader=loader)
    assert excinfo.value.problems == [
        's.yaml: leases[1] (name "b"): vms: must be >= 1, got 0 (line 10)',
        's.yaml: leases[2] (name "c"): type: required field is missing (line 11)',
        's.yaml: leases[2] (name "c"): duration: required field is missing (line 11)',
    ]


@pytest.mark.parametrize("loader", LOADERS)
def test_a_scenario_reads_the_same_under_each_loader(loader: LoaderClass) -> None:
    assert parse_scenario(DESIGN_EXAMPLE, loader=loader) == parse_scenario(
        DESIGN_EXAMPLE, loader=YAML_LOADERS[0])


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    assert problems(missing) == [f"{missing}: cannot read file: No such file or directory"]


def test_directory_is_unreadable(tmp_path: Path) -> None:
    found = problems(tmp_path)
    assert len(found) == 1
    assert found[0].startswith(f"{tmp_path}: cannot read file: ")


def test_scenario_error_message_is_the_problem_lines() -> None:
    with pytest.raises(ScenarioError) as excinfo:
        validate_scenario(scenario(lease("a", vms=0), lease("b", vms=0)), "s.yaml")
    assert str(excinfo.value).splitlines() == excinfo.value.problems
    assert len(excinfo.value.problems) == 2


def test_parse_scenario_names_its_source() -> None:
    with pytest.raises(ScenarioError) as excinfo:
        parse_scenario("cluster: {pools: []}\nleases: []\n", "inline")
    assert excinfo.value.problems == ["inline: cluster: pools: must not be empty (line 1)"]


# ---- valid scenarios -------------------------------------------------------------------


def test_design_example_loads(tmp_path: Path) -> None:
    loaded = load_scenario(write(tmp_path, DESIGN_EXAMPLE))
    assert loaded.pool_specs() == [
        PoolSpec(
            name="rp1",
            nodes=3,
            cpu=4000,
            memory=4096,
            exclusive=False,
            overhead=OverheadParams(
                suspend_rate=6.36,
                resume_rate=8.12,
                bandwidth=6.39,
                pause_seconds=0.005,
                reschedule_seconds=2.3,
                stop_seconds=0.0,
            ),
        )
    ]
    assert loaded.scheduler_config() == SchedulerConfig(
        policy="moml",
        alpha="median",
        backfilling=Backfilling.CONSERVATIVE,
        suspend_before_blocking=False,
    )
    [request] = loaded.requests()
    assert (request.name, request.vms, request.shape.cpu, request.shape.memory) == (
        "1",
        3,
        1000,
        256,
    )


def test_defaults() -> None:
    loaded = validate_scenario(
        {"cluster": {"pools": [{"name": "p", "nodes": 1}]}, "config": None, "leases": []}
    )
    [spec] = loaded.pool_specs()
    assert (spec.cpu, spec.memory, spec.exclusive) == (1000, 1024, False)
    assert spec.overhead == OverheadParams()
    assert loaded.scheduler_config() == SchedulerConfig()


@pytest.mark.parametrize(("fields", "speed"), [
    pytest.param({}, 1.0, id="default-1"),
    pytest.param({"speed": 1.5}, 1.5, id="relative"),
    pytest.param({"speed": 2}, 2.0, id="a-whole-number"),
    pytest.param({"speed": 0.25, "exclusive": True}, 0.25, id="slower"),
    pytest.param({"speed": 3, "groups": [{"nodes": 1, "cpu": 4, "memory": 4096},
                                         {"nodes": 1, "cpu": 8, "memory": 8192}],
                  "nodes": None, "cpu": None, "memory": None}, 3.0, id="of-mixed-sizes"),
])
def test_a_pools_speed_reaches_the_core(fields: dict[str, Any], speed: float) -> None:
    [spec] = validate_scenario(scenario(lease("a"), pools=[pool(**fields)])).pool_specs()
    assert spec.speed == speed


@pytest.mark.parametrize(("speed", "written"), [
    pytest.param(1.0, None, id="the-default-as-before-speeds"),
    pytest.param(1.5, 1.5, id="any-other"),
])
def test_a_pools_speed_is_written_back_unless_it_is_1(speed: float, written: float | None
                                                       ) -> None:
    """Trace headers and converted scenarios write the pools back."""
    [model] = validate_scenario(scenario(lease("a"), pools=[pool(speed=speed)])).cluster.pools
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert data.get("speed") == written
    again = validate_scenario(scenario(lease("a"), pools=[data]))
    assert again.pool_specs()[0].speed == speed


@pytest.mark.parametrize(("speed", "expected"), [
    pytest.param("0", "speed: must be > 0, got 0", id="zero"),
    pytest.param("-1.5", "speed: must be > 0, got -1.5", id="negative"),
    pytest.param("fast", 'speed: must be a number, got "fast"', id="a-string"),
    pytest.param("true", "speed: must be a number, got true", id="a-boolean"),
    pytest.param(".inf", "speed: must be a finite number", id="infinite"),
])
def test_a_bad_speed_is_one_clear_line(tmp_path: Path, speed: str, expected: str) -> None:
    """``speed`` as written in YAML."""
    text = yaml.safe_dump(scenario(lease("a"), pools=[pool(speed="SPEED")]), sort_keys=False)
    found = problems(write(tmp_path, text.replace("speed: SPEED", f"speed: {speed}")))
    assert len(found) == 1, found
    assert 'cluster.pools[0] (name "rp1"): ' + expected in found[0], found[0]


def test_exclusive_pool_and_quantity_strings() -> None:
    loaded = validate_scenario(
        scenario(
            lease("a", cpu="500m", memory="512Mi", arrival="5m", duration="1h30m"),
            pools=[pool(exclusive=True, cpu="2000m", memory="1Gi")],
        )
    )
    [spec] = loaded.pool_specs()
    assert (spec.exclusive, spec.cpu, spec.memory) == (True, 2000, 1024)
    [request] = loaded.requests()
    assert (request.submitted, request.duration) == (300.0, 5400.0)
    assert (request.shape.cpu, request.shape.memory) == (500, 512)


def test_requests_sorted_by_arrival_then_file_order() -> None:
    loaded = validate_scenario(
        scenario(
            lease("z-late", arrival=10),
            lease("y-first", arrival=0),
            lease("b-late", arrival="10s"),
            lease("m-middle", arrival=5),
            lease("a-first", arrival=0),
        )
    )
    # Not alphabetical within a tie: file order is the tiebreak, never the name.
    assert [r.name for r in loaded.requests()] == [
        "y-first",
        "a-first",
        "m-middle",
        "z-late",
        "b-late",
    ]


def test_lease_fitting_one_of_several_pools_is_accepted() -> None:
    loaded = validate_scenario(
        scenario(lease("a", cpu=8), pools=[pool("small"), pool("big", cpu=8)])
    )
    assert loaded.leases[0].pool is None


@pytest.mark.parametrize(
    ("policy", "backfilling", "expected_policy", "expected_backfilling"),
    [
        (None, None, "mlip", Backfilling.EASY),
        ("nop", None, "nop", Backfilling.EASY),
        (None, "none", "mlip", Backfilling.NONE),
        ("kube-scheduler", Backfilling.CONSERVATIVE, "kube-scheduler", Backfilling.CONSERVATIVE),
    ],
)
def test_scheduler_config_overrides(
    policy: str | None,
    backfilling: str | Backfilling | None,
    expected_policy: str,
    expected_backfilling: Backfilling,
) -> None:
    loaded = validate_scenario(
        scenario(config={"policy": "mlip", "backfilling": "easy", "alpha": "p25"})
    )
    config = loaded.scheduler_config(policy=policy, backfilling=backfilling)
    assert (config.policy, config.backfilling, config.alpha) == (
        expected_policy,
        expected_backfilling,
        "p25",
    )


@pytest.mark.parametrize(
    ("policy", "backfilling", "fragment"),
    [
        ("fifo", None, 'unknown policy "fifo"; expected one of nop, mlip'),
        (None, "greedy", 'unknown backfilling "greedy"; expected one of conservative, easy, none'),
    ],
)
def test_scheduler_config_rejects_bad_overrides(
    policy: str | None, backfilling: str | None, fragment: str
) -> None:
    loaded = validate_scenario(scenario())
    with pytest.raises(ValueError, match=re.escape(fragment)):
        loaded.scheduler_config(policy=policy, backfilling=backfilling)


@pytest.mark.parametrize(
    ("value", "alpha"),
    [
        ("median", "median"),
        ("p25", "p25"),
        ("p25.0", "p25"),
        ("p12.5", "p12.5"),
        ("p0", "p0"),
        ("p100", "p100"),
        (120, 120.0),
        (0.5, 0.5),
        ("2m", 120.0),
    ],
)
def test_parse_alpha_accepts(value: object, alpha: str | float) -> None:
    assert parse_alpha(value) == alpha


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("p101", "percentile must be between p0 and p100"),
        ("mean", 'expected "median", a percentile like "p25"'),
        ("q0.25", 'got "q0.25"'),
        (-1, "must not be negative"),
        (True, "got true"),
    ],
)
def test_parse_alpha_rejects(value: object, fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        parse_alpha(value)


def test_scenario_model_is_the_public_result(tmp_path: Path) -> None:
    assert isinstance(load_scenario(write(tmp_path, DESIGN_EXAMPLE)), Scenario)


# ---- robustness ------------------------------------------------------------------------

_KEYS = st.sampled_from(
    ["cluster", "pools", "config", "leases", "name", "type", "vms", "duration", "deadline",
     "start", "ready", "pool", "cpu", "memory", "nodes", "overhead", "policy", "alpha", "x"]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "rp1", "1h", "-5m", "500m", "1Gi", "p25", "AdvanceReservation", "local"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.one_of(_KEYS, st.integers(0, 3)), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(data=st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_any_input_gives_a_scenario_or_problem_lines(data: dict[Any, Any]) -> None:
    try:
        validate_scenario(data, "f.yaml")
    except ScenarioError as exc:
        assert exc.problems
        assert all(line.startswith("f.yaml: ") and "\n" not in line for line in exc.problems)


# ---- pools of mixed node sizes ------------------------------------------------------

SMALL = {"nodes": 8, "cpu": 8, "memory": "32Gi"}
BIG = {"nodes": 4, "cpu": 32, "memory": "128Gi"}


def mixed_pool(name: str = "m", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "groups": [SMALL, BIG]}
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


@pytest.mark.parametrize(("pool_data", "spec"), [
    pytest.param(mixed_pool(), PoolSpec("m", 12, 32000, 131072, groups=(
        NodeGroup(8, 8000, 32768), NodeGroup(4, 32000, 131072))), id="groups"),
    pytest.param(mixed_pool(nodes=12), PoolSpec("m", 12, 32000, 131072, groups=(
        NodeGroup(8, 8000, 32768), NodeGroup(4, 32000, 131072))), id="nodes-agreeing"),
    pytest.param(mixed_pool(groups=[{"nodes": 2, "cpu": "500m", "memory": 512}]),
                 PoolSpec("m", 2, 500, 512), id="one-group-is-one-size"),
    pytest.param(mixed_pool(groups=[SMALL, {**SMALL, "nodes": 2}]),
                 PoolSpec("m", 10, 8000, 32768, groups=(
                     NodeGroup(8, 8000, 32768), NodeGroup(2, 8000, 32768))),
                 id="groups-of-one-size"),
])
def test_a_pool_of_mixed_sizes_is_the_cores_pool_of_groups(pool_data: dict[str, Any],
                                                           spec: PoolSpec) -> None:
    loaded = validate_scenario(scenario(lease("a", cpu="500m", memory=512), pools=[pool_data]))
    got = loaded.pool_specs()[0]
    assert got.sizes() == spec.sizes()
    assert (got.nodes, got.cpu, got.memory) == (spec.nodes, spec.cpu, spec.memory)


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(scenario(lease("a"), pools=[mixed_pool(nodes=10)]),
                 'cluster.pools[0] (name "m"): nodes: is 10 but the groups have 12 nodes; drop'
                 " nodes or make them agree", id="nodes-disagree"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(exclusive=True)]),
                 'cluster.pools[0] (name "m"): groups: an exclusive pool has nodes of one'
                 " size; drop groups, or exclusive", id="exclusive-with-groups"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(cpu=8)]),
                 'cluster.pools[0] (name "m"): cpu: each group gives its nodes\' cpu; drop cpu'
                 " here, or drop groups", id="cpu-beside-groups"),
    pytest.param(scenario(lease("a"), pools=[pool(nodes=None)]),
                 'cluster.pools[0] (name "rp1"): nodes: required field is missing (or give'
                 " groups, for nodes of mixed sizes)", id="neither-nodes-nor-groups"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(groups=[])]),
                 'cluster.pools[0] (name "m"): groups: must not be empty', id="groups-empty"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(groups=[{**SMALL, "nodes": 0}])]),
                 'cluster.pools[0].groups[0]: nodes: must be >= 1, got 0',
                 id="group-without-nodes"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(groups=[{"nodes": 1, "cpu": 8}])]),
                 'cluster.pools[0].groups[0]: memory: required field is missing',
                 id="group-without-memory"),
    pytest.param(scenario(lease("a"), pools=[mixed_pool(groups=[{**SMALL, "gpu": 1}])]),
                 'cluster.pools[0].groups[0]: gpu: unknown field',
                 id="group-unknown-field"),
    pytest.param(scenario(lease("a", cpu=64), pools=[mixed_pool()]),
                 'leases[0] (name "a"): cpu: one VM needs 64 cores but the largest node'
                 ' (pool "m") has 32 cores', id="larger-than-every-size"),
    pytest.param(scenario(lease("a", cpu=64, pool="m"), pools=[mixed_pool()]),
                 'leases[0] (name "a"): cpu: one VM needs 64 cores but the largest node of'
                 ' pool "m" has 32 cores', id="larger-than-every-size-of-the-named-pool"),
    pytest.param(scenario(lease("a", cpu=16, memory="24Gi", pool="m"),
                          pools=[mixed_pool(groups=[SMALL, {**BIG, "memory": "16Gi"}])]),
                 'leases[0] (name "a"): cpu: one VM needs 16 cores and 24576Mi but no node of'
                 ' pool "m" has both (m: 8 cores, 32768Mi or 32 cores, 16384Mi)',
                 id="no-size-has-both"),
])
def test_mixed_pool_problems_are_one_line(tmp_path: Path, data: dict[str, Any],
                                          expected: str) -> None:
    found = problems(write(tmp_path, data))
    assert len(found) == 1, found
    assert expected in found[0], found[0]


@pytest.mark.parametrize(("cpu", "memory"), [
    pytest.param(32, "128Gi", id="only-the-big-nodes"),
    pytest.param(8, "32Gi", id="every-node"),
])
def test_a_lease_fitting_some_size_of_a_mixed_pool_is_accepted(cpu: int, memory: str) -> None:
    loaded = validate_scenario(scenario(lease("a", cpu=cpu, memory=memory, pool="m"),
                                        pools=[mixed_pool()]))
    assert loaded.leases[0].cpu == cpu * 1000


def test_nodes_a_capacity_change_adds_past_the_groups_are_of_the_last_groups_size() -> None:
    loaded = validate_scenario({**scenario(lease("a"), pools=[mixed_pool()]),
                                "cluster": {"pools": [mixed_pool()],
                                            "capacity": [{"at": 10, "pool": "m", "nodes": 14}]}})
    [(at, change)] = loaded.cluster.capacity_changes()
    assert (at, change.down) == (10, frozenset())
    assert change.pool.sizes()[11:] == [Shape(32000, 131072)] * 3
