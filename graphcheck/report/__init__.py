"""graphcheck.report (being built)."""
