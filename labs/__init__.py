"""The code behind every page of the book: models, labs, tools, records and charts."""

from pathlib import Path

__version__ = "0.1.0"

# The project's top folder: book/, labs/, data/ live here.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
