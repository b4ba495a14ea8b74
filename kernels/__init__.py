"""graphcheck.kernels: the certified reference kernels (being built)."""
