"""nova-orphans benchmark: a synthetic cloud, a real placement, three tools."""
