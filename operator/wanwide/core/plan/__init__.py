"""Plan a trial (pure): the matrix, regions and links, link classes, the fault timeline, services' settings,
the runner's configuration; every name and label wanwide derives."""
