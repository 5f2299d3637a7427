"""One test over every lab in the registry: the lab contract holds for each of them.

For each lab: its parameters round-trip through the command line for every profile, its
panel's shell command parses back into the panel's parameters, every recorded run of it
loads and reads back as the lab's typed parameters, its page's figures and headline
(labs.book.compare) can be computed from every recorded run, its page ends with the
comparison cell, and every `{glue}` key its page uses is among those figures. (That the
page side never imports the infrastructure is checked over all modules in test_layout.py.)
"""

from __future__ import annotations

from dataclasses import fields

import pytest
from conftest import PROJECT_ROOT, glued_names

from labs import records, registry
from labs.__main__ import build_parser
from labs.book.panel import command_arguments

LABS = registry.labs()
IDS = [lab.name for lab in LABS]


def parse_back(arguments: list[str]):
    args = build_parser().parse_args(arguments)
    return args.lab_entry.parameters.from_args(args)


@pytest.mark.parametrize("lab", LABS, ids=IDS)
def test_every_profile_round_trips_through_its_command_line(lab):
    for profile in lab.parameters.PROFILES:
        params = lab.parameters.for_profile(profile)
        words = params.command_line().split()
        assert words[:5] == ["python", "-m", "labs", "run", lab.name]
        assert parse_back(words[3:]) == params, profile
        record = params.as_record()
        assert record["command_line"] == params.command_line()
        assert {f.name for f in fields(params)} <= set(record)


@pytest.mark.parametrize("lab", LABS, ids=IDS)
def test_the_panel_command_parses_back_into_its_parameters(lab):
    page = lab.page_module()
    panel = page.panel()
    assert parse_back(command_arguments(panel.command())) == panel.defaults
    assert panel.parameters is lab.parameters


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab.book_page], ids=lambda lab: lab.name)
def test_every_recorded_run_reads_back_as_its_labs_typed_parameters(lab):
    # The page side can read a run's parameters as the lab's own dataclass: every value the
    # run recorded, typed and in range (a run older than a field takes its profile's value).
    for path in records.scan_runs(lab.name)[0]:
        recorded = records.load_run(path).meta["parameters"]
        params = lab.parameters.from_record(recorded)
        for item in fields(params):
            if item.name in recorded:
                value = getattr(params, item.name)
                assert (list(value) if isinstance(value, tuple) else value) == \
                    recorded[item.name], (path.name, item.name)


def test_a_record_missing_a_newer_field_takes_its_profiles_value():
    from labs.write_mostly.params import Parameters

    quick = Parameters.for_profile("quick")
    older = {k: v for k, v in quick.as_record().items() if k != "power_cut_write_s"}
    assert Parameters.from_record(older) == quick
    assert Parameters.from_record({**older, "runtime_s": 2.0}).runtime_s == 2.0


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab.book_page], ids=lambda lab: lab.name)
def test_every_recorded_run_loads_and_feeds_the_page(lab):
    valid, refused = records.scan_runs(lab.name)
    assert refused == [], refused
    assert valid, f"no recorded run of {lab.name}"
    page = lab.page_module()
    for path in valid:
        run = records.load_run(path)
        figures = page.figures(run)
        assert figures and all(isinstance(v, str) for v in figures.values()), path.name
        assert not page.provenance(run).empty


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab.book_page], ids=lambda lab: lab.name)
def test_the_page_shows_the_shipped_run_named_explicitly(lab):
    shipped = records.shipped_run(lab.name)  # data/runs/<lab>/SHIPPED names a valid run
    assert shipped.lab == lab.name
    text = (PROJECT_ROOT / lab.book_page).read_text()
    assert f'shipped_run("{lab.name}")' in text and "newest_run(" not in text


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab.book_page], ids=lambda lab: lab.name)
def test_every_glued_figure_on_the_page_is_computed(lab):
    used = glued_names(PROJECT_ROOT / lab.book_page)
    if not used:
        return
    figures = lab.page_module().figures(records.shipped_run(lab.name))
    assert used <= set(figures), sorted(used - set(figures))


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab.book_page], ids=lambda lab: lab.name)
def test_every_lab_has_a_headline_for_every_recorded_run(lab):
    from labs.book.compare import HEADLINE_COLUMNS, check_headline

    page = lab.page_module()
    assert callable(getattr(page, "headline", None)), f"{lab.name}: page.headline missing"
    for path in records.scan_runs(lab.name)[0]:
        table = page.headline(records.load_run(path))
        assert list(table.columns) == HEADLINE_COLUMNS, path.name
        assert len(table) >= 2, path.name
        check_headline(table)  # units known, values finite, better is higher/lower/neither
    text = (PROJECT_ROOT / lab.book_page).read_text()
    assert f'compare.show("{lab.name}",' in text, f"{lab.book_page}: the comparison cell"
