"""graphcheck.lint (being built)."""
