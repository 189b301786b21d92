"""``wanwide doctor``: whether a cluster can run a Benchmark. ``checks`` judges (pure, one function per line
of its table), ``gather`` reads the cluster and runs the probes (netem in a pod per node, the results bucket),
``cli`` prints the table."""
