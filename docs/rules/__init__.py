"""The rule pages (one markdown file per rule code), installed as graphcheck.ruledocs."""
