"""What runs and what is made of the results, the same under both providers.

- ``runner``: one Rally run in a region (barrier, Rally, gauges, the bundle, its upload), the network probe.
- ``results``: bundles → tables, statistics, figures, the report and comparisons.
"""
