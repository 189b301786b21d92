"""The operator: kopf handlers (``handlers``, thin), a Trial's observation (``observe``), the lifecycle's step
carried out with objects (``phases``), the one executor of writes (``actions``), Benchmarks' trials and
scheduling (``benchmark``), metrics."""
