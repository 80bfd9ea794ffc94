"""The pure core: decisions over plain data. Nothing here starts a process or opens a socket."""
