"""One module per command family: the flows behind the invoke tasks."""
