"""The edges: the one subprocess runner and one thin wrapper per external program, store or API."""
