"""A three-module engine for the capture-map tests: what a recorded function calls in other modules."""
