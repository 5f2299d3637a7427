"""Sphinx extension: a site that works offline and loads without console errors.

1. Serve Vega, Vega-Lite and vega-embed from the site's own _static/.

Workshop rooms often have no internet, so the built site must never fetch its chart
libraries from a CDN. vl-convert (maintained by the Vega project) bundles the three
libraries at the exact Vega-Lite version Altair emits; we write that bundle next to the
site's other static files at build time and load it as a classic (deferred) script, wrapped
in a function so its names stay out of the page's global scope: a module script is refused
by browsers for pages opened as files (file://, origin "null"), and readers in a workshop
room often do exactly that. Chart outputs (labs/book/theme.py) wait for the
'labs-vega-ready' event the bundle fires, and show a static image until then.

2. Drop exact duplicate <script> entries from each page. Jupyter Book 1.0.4 registers
   sphinx-thebe's and sphinx-togglebutton's inline configuration twice; the second
   `const THEBE_JS_URL = ...` is a SyntaxError in every reader's console.
"""

from __future__ import annotations

from pathlib import Path

BUNDLE_NAME = "vega-bundle.js"
READY_SNIPPET = """
window.vegaEmbed = vegaEmbed;
window.vega = vega;
window.vegaLite = vegaLite;
window.dispatchEvent(new Event("labs-vega-ready"));
"""


def vegalite_minor_version() -> str:
    """The Vega-Lite version Altair emits, as vl-convert names it (e.g. '6.4')."""
    import altair as alt

    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


def write_bundle(target_dir: Path) -> Path:
    import vl_convert

    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / BUNDLE_NAME
    version = vegalite_minor_version()
    stamp = target_dir / f"{BUNDLE_NAME}.version"
    wanted_stamp = f"vega-lite {version}, vl-convert {vl_convert.__version__}, classic"
    if target.exists() and stamp.exists() and stamp.read_text() == wanted_stamp:
        return target  # already bundled for this version: keeps rebuilds fast
    bundle = vl_convert.javascript_bundle(snippet=READY_SNIPPET, vl_version=version)
    # A classic script, not a module: the same code, inside a function (modules are strict).
    target.write_text('(function () {\n"use strict";\n' + bundle + "\n})();\n")
    stamp.write_text(wanted_stamp)
    return target


def _on_builder_inited(app) -> None:
    if app.builder.format != "html":
        return
    generated = Path(app.outdir).parent / ".vega-static"
    write_bundle(generated)
    app.config.html_static_path.append(str(generated))


def _script_key(script) -> tuple:
    # The twin entries differ only in an empty file name: None in one, "" in the other.
    attributes = tuple(sorted((str(k), str(v)) for k, v in getattr(script, "attributes",
                                                                      {}).items()))
    return (getattr(script, "filename", None) or "", attributes)


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    # Classic and deferred: it loads from file:// as well as over HTTP, after the page.
    app.add_js_file(BUNDLE_NAME, loading_method="defer")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
