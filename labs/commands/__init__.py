"""One module per command of `python -m labs` that is not a lab (labs/__main__.py wires them)."""
