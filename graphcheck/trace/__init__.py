"""graphcheck.trace (being built)."""
