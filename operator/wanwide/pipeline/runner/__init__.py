"""The runner: one Rally run in one region (barrier, Rally, gauges, the result bundle, its upload), and the
network probe; what a Rally Job or a lab process runs (``wanwide runner``)."""
