"""One Altair theme for the whole book, an offline renderer, and the controls.

Importing this module:

- registers and enables the "storage-book" theme (fonts, sizes, a colour-blind-safe palette);
- registers and enables the "storage-book" renderer. Its HTML output calls `vegaEmbed`
  from the bundle the site serves from its own `_static/` (labs/book/sphinx_offline.py), so
  charts render offline on the static site. In a live notebook the same output also
  carries the Vega-Lite JSON, which JupyterLab renders natively.

Every control a reader touches on the static site is an Altair parameter bound to an input
(`alt.binding_range`, `alt.binding_select`), evaluated in the browser: no kernel needed.
Aggregate in pandas first; the renderer refuses to embed a spec over SPEC_LIMIT_BYTES.
"""

from __future__ import annotations

import base64
import html
import json
import uuid

import altair as alt

THEME_NAME = "storage-book"
RENDERER_NAME = "storage-book"
# A page budget: the largest page should stay well under 1.5 MB with its charts.
SPEC_LIMIT_BYTES = 600_000
# The model, on every chart: black, as a tick or a diamond where it is one value and a dashed
# line where it is a curve (the intro's "How to read the charts" says so). Measurements
# take the palette's colours.
MODEL_COLOR = "#000000"

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000"]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


@alt.theme.register(THEME_NAME, enable=True)
def storage_book_theme() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "font": FONT,
            "view": {"continuousWidth": 460, "continuousHeight": 300, "stroke": None},
            "range": {"category": PALETTE},
            "axis": {"labelFontSize": 12, "titleFontSize": 13, "gridColor": "#e6e6e6",
                     "titleFontWeight": "normal"},
            "legend": {"labelFontSize": 12, "titleFontSize": 13, "orient": "bottom",
                       "direction": "vertical"},
            "title": {"fontSize": 15, "anchor": "start", "fontWeight": "normal"},
            "line": {"strokeWidth": 2.5},
            "point": {"size": 60, "filled": True},
        }
    }


def static_image(spec: dict) -> str:
    """The chart drawn once at build time (vl-convert, offline), as an SVG data URL.

    It is what a reader sees where scripts cannot run (a locked-down browser, a feed
    reader, a printed page); the live chart replaces it as soon as the bundle has drawn it.
    """
    import vl_convert

    svg = vl_convert.vegalite_to_svg(spec)
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def chart_html(spec: dict) -> str:
    """A static image of the chart, replaced by the live chart once the bundle has loaded."""
    element_id = f"labs-chart-{uuid.uuid4().hex[:12]}"
    title = html.escape(str(spec.get("title", "")), quote=True)
    if isinstance(spec.get("title"), dict):
        title = html.escape(str(spec["title"].get("text", "")), quote=True)
    # Escape "</" so a string in the data can never close the script element.
    spec_json = json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<div class="labs-chart" id="{element_id}" data-chart-title="{title}">'
        f'<img class="labs-chart-static" alt="{title or "chart"} (static image)" '
        f'src="{static_image(spec)}" style="max-width: 100%;"></div>\n'
        "<script>\n(function () {\n"
        f"  var spec = {spec_json};\n"
        "  function draw() {\n"
        f"    var element = document.getElementById('{element_id}');\n"
        "    var still = element.querySelector('.labs-chart-static');\n"
        "    var live = document.createElement('div');\n"
        "    element.appendChild(live);\n"
        "    window.vegaEmbed(live, spec, {actions: false, renderer: 'svg'})\n"
        "      .then(function () {\n"
        "        if (still) { still.remove(); }\n"
        "        element.setAttribute('data-rendered', 'yes');\n"
        "      })\n"
        "      .catch(function (error) { console.error('chart failed: ' + error); });\n"
        "  }\n"
        "  if (window.vegaEmbed) { draw(); }\n"
        "  else { window.addEventListener('labs-vega-ready', draw, {once: true}); }\n"
        "})();\n</script>"
    )


def storage_book_renderer(spec: dict, **metadata) -> dict:
    size = len(json.dumps(spec))
    if size > SPEC_LIMIT_BYTES:
        raise ValueError(f"chart spec is {size:,} bytes (limit {SPEC_LIMIT_BYTES:,}): "
                         "aggregate in pandas before charting")
    return {
        "text/html": chart_html(spec),
        f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.lstrip('v').split('.')[0]}+json": spec,
        "text/plain": f"<{spec.get('title', 'chart')}>",
    }


alt.renderers.register(RENDERER_NAME, storage_book_renderer)
alt.renderers.enable(RENDERER_NAME)


# ----------------------------------------------------------------------------------------
# Controls: parameters bound to inputs, evaluated in the browser
# ----------------------------------------------------------------------------------------


def slider(name: str, value: float, minimum: float, maximum: float, step: float = 1,
           label: str | None = None) -> alt.Parameter:
    return alt.param(name=name, value=value,
                     bind=alt.binding_range(min=minimum, max=maximum, step=step,
                                            name=(label or name) + " "))


def dropdown(name: str, value, options: list, labels: list[str] | None = None,
             label: str | None = None) -> alt.Parameter:
    return alt.param(name=name, value=value,
                     bind=alt.binding_select(options=options,
                                             labels=labels or [str(o) for o in options],
                                             name=(label or name) + " "))
