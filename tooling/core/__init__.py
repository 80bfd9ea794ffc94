"""The pure core: decisions over plain data. Nothing here starts a process or opens a socket.

One room per domain, one way (a contract in ``pyproject.toml``): :mod:`.ci`,
:mod:`.doctor`, :mod:`.rules` and :mod:`.apps` on top, then :mod:`.report`, then
:mod:`.apply` and :mod:`.bump`, then :mod:`.plan` and :mod:`.refs`, and :mod:`.text` (what
every written, posted or printed text passes through) at the bottom."""
