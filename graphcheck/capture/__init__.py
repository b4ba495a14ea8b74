"""graphcheck.capture (being built)."""
