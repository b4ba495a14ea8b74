"""graphcheck's pytest plugin (being built). Imports nothing heavy at import time."""
