"""Bad input, everywhere: every command and every lab parameter, table-driven.

Each case runs `python -m labs ...` in-process (labs.__main__.main) and asserts what the
book promises a reader who mistypes: a non-zero exit, exactly one line on stderr, no
traceback, and nothing written to data/runs/. The cases are generated from the registry
(every lab's every ranged or typed parameter) and listed by hand for the other commands.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from labs import registry
from labs.__main__ import main

BINARY = bytes(range(256)) * 8


def lab_cases() -> list[tuple[str, list[str]]]:
    cases = []
    for lab in registry.labs():
        hints = typing.get_type_hints(lab.parameters)
        run = ["run", lab.name, "--quick" if "quick" in lab.parameters.PROFILES else "--seed=1"]
        cases.append((f"{lab.name}: unknown host", [*run, "--host", "no-such-host"]))
        cases.append((f"{lab.name}: host with a space", [*run, "--host", "two words"]))
        cases.append((f"{lab.name}: unknown profile", ["run", lab.name, "--profile", "huge"]))
        cases.append((f"{lab.name}: unknown option", [*run, "--no-such-option", "1"]))
        for item in dataclasses.fields(lab.parameters):
            if not item.metadata.get("cli", True) or item.name in ("host", "profile"):
                continue
            flag = "--" + item.name.replace("_", "-")
            kind = typing.get_args(hints[item.name])[0] if typing.get_args(
                hints[item.name]) else hints[item.name]
            if kind in (int, float) or hints[item.name] in (int, float):
                cases.append((f"{lab.name} {flag}: not a number", [*run, flag, "lots"]))
            if float in (kind, hints[item.name]):
                # float() reads both; NaN passes every range check (it compares false).
                for word in ("nan", "inf"):
                    cases.append((f"{lab.name} {flag}: {word}", [*run, flag, word]))
            if item.metadata.get("minimum") is not None:
                low = item.metadata["minimum"] - 1
                cases.append((f"{lab.name} {flag}: below its range",
                              [*run, flag, str(int(low) if low == int(low) else low)]))
            if item.metadata.get("maximum") is not None:
                high = item.metadata["maximum"] * 10 + 1
                cases.append((f"{lab.name} {flag}: above its range",
                              [*run, flag, str(int(high) if high == int(high) else high)]))
            if item.metadata.get("choices"):
                cases.append((f"{lab.name} {flag}: not a choice", [*run, flag, "nonsense"]))
    return cases


def file_cases(tmp: Path) -> list[tuple[str, list[str]]]:
    empty, binary = tmp / "empty.txt", tmp / "binary.bin"
    missing, folder = tmp / "missing.txt", tmp / "a-folder"
    cases = []
    for tool in ("fio", "mdstat", "pgbench"):
        for what, path in (("missing", missing), ("empty", empty), ("binary", binary),
                           ("a folder", folder)):
            cases.append((f"parse {tool}: {what} file", ["parse", tool, str(path)]))
    cases += [
        ("parse pgbench: binary log", ["parse", "pgbench", str(binary), "--log", str(binary)]),
        ("parse: unknown tool", ["parse", "nosuchtool", str(empty)]),
        ("images load: missing", ["images", "load", str(missing)]),
        ("images load: not an archive", ["images", "load", str(binary)]),
        ("images load: empty", ["images", "load", str(empty)]),
        ("images build: unknown", ["images", "build", "mysql"]),
        ("images: unknown action", ["images", "shrink"]),
    ]
    return cases


OTHER_CASES = [
    ("no command", []),
    ("unknown command", ["nonsense"]),
    ("run: no lab", ["run"]),
    ("run: unknown lab", ["run", "no-such-lab"]),
    ("quorum: no nodes", ["quorum"]),
    ("quorum: nodes 0", ["quorum", "--nodes", "0"]),
    ("quorum: nodes not a number", ["quorum", "--nodes", "six"]),
    ("quorum: write > nodes", ["quorum", "--nodes", "3", "--write", "4"]),
    ("quorum: read 0", ["quorum", "--nodes", "3", "--read", "0"]),
    ("quorum: azs > nodes", ["quorum", "--nodes", "3", "--azs", "4"]),
    ("quorum: p-node 1.5", ["quorum", "--nodes", "3", "--p-node", "1.5"]),
    ("quorum: p-node nan", ["quorum", "--nodes", "3", "--p-node", "nan"]),
    ("quorum: p-node inf", ["quorum", "--nodes", "3", "--p-node", "inf"]),
    ("quorum: p-az without azs", ["quorum", "--nodes", "3", "--p-node", "0.1", "--p-az", "0.1"]),
    ("quorum: table with nodes", ["quorum", "--table", "--nodes", "3"]),
    ("quorum: table max 0", ["quorum", "--table", "--max-nodes", "0"]),
    ("quorum: table max 1000", ["quorum", "--table", "--max-nodes", "1000"]),
    ("quorum: problem kind", ["quorum", "--problem", "nope"]),
    ("quorum: problem seed", ["quorum", "--problem", "zones", "--seed", "-1"]),
    ("quorum: -c alone", ["quorum", "-c"]),
    ("vm up: cpus 0", ["vm", "up", "--cpus", "0"]),
    ("vm up: memory 1", ["vm", "up", "--memory", "1"]),
    ("vm up: memory huge", ["vm", "up", "--memory", "10000000"]),
    ("vm up: disk 1", ["vm", "up", "--disk-mib", "1"]),
    ("vm up: cpus not a number", ["vm", "up", "--cpus", "two"]),
    ("vm up: slow iops negative", ["vm", "up", "--slow-iops", "-1"]),
    ("vm up: slow iops huge", ["vm", "up", "--slow-iops", "10000000"]),
    ("vm up: slow bps negative", ["vm", "up", "--pair", "--slow-bps", "-5"]),
    ("vm run: no command", ["vm", "run", "vm1"]),
    ("vm run: no such VM", ["vm", "run", "vm7", "--", "true"]),
    ("vm run: not running", ["vm", "run", "vm2", "--", "true"]),
    ("vm run: timeout 0", ["vm", "run", "vm1", "--timeout", "0", "--", "true"]),
    ("vm run: timeout nan", ["vm", "run", "vm1", "--timeout", "nan", "--", "true"]),
    ("vm down: no such VM", ["vm", "down", "vm1", "vm9"]),
    ("vm: unknown action", ["vm", "explode"]),
    ("clean: unknown host", ["clean", "--host", "no-such-host"]),
    ("check-device: sda", ["check-device", "/dev/sda"]),
    ("check-device: dotdot", ["check-device", "/dev/../dev/vda"]),
    ("check-device: relative", ["check-device", "vda"]),
    ("check-device: double slash", ["check-device", "/dev//vda"]),
    ("check-device: not under /dev", ["check-device", "/etc/passwd"]),
    ("check-device: symlink", ["check-device", "/dev/stdin"]),
    ("check-device: unknown host", ["check-device", "/dev/vda", "--host", "nowhere"]),
    ("list: unknown option", ["list", "--everything"]),
]


def inventory_cases(tmp: Path) -> list[tuple[str, list[str], dict, str]]:
    """(name, argv, env, inventory text); the inventory is what is wrong."""
    texts = {
        "not TOML": "[hosts.a\naddress = ",
        "hosts not a table": 'hosts = "everything"\n',
        "no address": '[hosts.a]\nuser = "root"\n',
        "address not a string": "[hosts.a]\naddress = 5\n",
        "reserved name local": '[hosts.local]\naddress = "x"\n',
        "reserved name vm1": '[hosts.vm1]\naddress = "x"\n',
        "unknown field": '[hosts.a]\naddress = "x"\npassword = "secret"\n',
        "port not a number": '[hosts.a]\naddress = "x"\nport = "22"\n',
        "port out of range": '[hosts.a]\naddress = "x"\nport = 70000\n',
        "user not a string": '[hosts.a]\naddress = "x"\nuser = 7\n',
        "link address not a string": '[hosts.a]\naddress = "x"\nlink_address = 7\n',
        "binary file": None,
    }
    cases = []
    for what, text in texts.items():
        path = tmp / f"inventory-{len(cases)}.toml"
        if text is None:
            path.write_bytes(BINARY)
        else:
            path.write_text(text)
        for argv in (["hosts"], ["run", "quorum", "--quick", "--host", "a"]):
            cases.append((f"inventory {what}: {' '.join(argv[:2])}", argv,
                          {"LABS_INVENTORY": str(path)}, what))
    cases.append(("inventory named but missing", ["hosts"],
                  {"LABS_INVENTORY": str(tmp / "no-such-inventory.toml")}, "missing"))
    return cases


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    for key, sub in (("LABS_STATE_DIR", "state"), ("LABS_WORK_DIR", "work"),
                     ("LABS_RUNS_DIR", "runs")):
        monkeypatch.setenv(key, str(tmp_path / sub))
    (tmp_path / "runs").mkdir()
    (tmp_path / "hosts.toml").write_text("")
    monkeypatch.setenv("LABS_INVENTORY", str(tmp_path / "hosts.toml"))
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "binary.bin").write_bytes(BINARY)
    (tmp_path / "a-folder").mkdir()
    return tmp_path


def run_case(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused(name: str, code: int, err: str, runs: Path) -> None:
    assert code != 0, f"{name}: exit code 0"
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"{name}: stderr has {len(lines)} lines: {err!r}"
    assert "Traceback" not in err, name
    assert not any(runs.rglob("run.json")) and not any(runs.rglob(".staging-*")), name


CASE_COUNTS: dict[str, int] = {}


def test_every_lab_parameter_refuses_bad_values(sandbox, capsys):
    cases = lab_cases()
    for name, argv in cases:
        code, _, err = run_case(argv, capsys)
        assert_refused(name, code, err, sandbox / "runs")
        assert code == 2, f"{name}: bad input must exit with 2, got {code}"
    CASE_COUNTS["labs"] = len(cases)
    assert len(cases) >= 60


def test_every_command_refuses_bad_input(sandbox, capsys):
    cases = OTHER_CASES + file_cases(sandbox)
    for name, argv in cases:
        code, _, err = run_case(argv, capsys)
        assert_refused(name, code, err, sandbox / "runs")
    CASE_COUNTS["commands"] = len(cases)


def test_vm_commands_refuse_before_anything_starts(sandbox, capsys):
    # A throttle QEMU would refuse used to be found out only after a KVM probe boot.
    for name, argv in OTHER_CASES:
        if argv[:1] != ["vm"] or argv[1:2] == ["run"] and "vm2" in argv:
            continue
        code, out, err = run_case(argv, capsys)
        assert code == 2, f"{name}: exit {code}: {err}"
        assert out == "", f"{name}: printed {out!r} before refusing"
    assert not (sandbox / "state" / "vms").exists()


def test_malformed_inventories_are_refused(sandbox, capsys, monkeypatch):
    cases = inventory_cases(sandbox)
    for name, argv, env, _what in cases:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        code, _, err = run_case(argv, capsys)
        assert_refused(name, code, err, sandbox / "runs")
        assert "inventory" in err or "toml" in err.lower() or "hosts." in err, (name, err)
    CASE_COUNTS["inventories"] = len(cases)


def test_malformed_recorded_runs_are_refused_and_never_chosen(sandbox, capsys):
    from labs import records

    lab_dir = sandbox / "runs" / "quorum"
    broken = {"20260101T000000Z-local": "not json", "20260102T000000Z-local": "[]",
              "20260103T000000Z-local": '{"lab": "quorum"}'}
    for run_id, text in broken.items():
        (lab_dir / run_id / "raw").mkdir(parents=True)
        (lab_dir / run_id / "run.json").write_text(text)
    code, out, err = run_case(["list"], capsys)
    assert code == 0 and err == ""
    assert out.count("refused:") == len(broken)
    with pytest.raises(records.RecordError, match="no valid recorded run"):
        records.newest_run("quorum", sandbox / "runs")
    CASE_COUNTS["runs"] = len(broken)


def test_the_cases_add_up_to_at_least_a_hundred(figures):
    total = sum(CASE_COUNTS.values())
    figures(f"bad input: {total} cases refused cleanly ({CASE_COUNTS})")
    assert total >= 100, CASE_COUNTS
