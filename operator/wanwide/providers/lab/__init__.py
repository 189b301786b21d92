"""The lab: a trial on one machine, for real. Regions are network namespaces, links are shaped with netem,
linkemu or VDE wirefilter, MariaDB/Galera, memcached and Keystone run as processes; ``trial`` carries the lifecycle out,
``run`` runs a Benchmark's trials on deployments as the lifecycle groups them."""
