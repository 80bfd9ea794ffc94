"""``python -m tooling TASK``: the ``iac`` console script without installing its wrapper."""

from tooling.tasks import main

main()
