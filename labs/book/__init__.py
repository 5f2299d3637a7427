"""Book plumbing: the Altair theme and offline renderer, the live panel, the Sphinx
extension that serves the chart libraries locally, and the build entry point."""
