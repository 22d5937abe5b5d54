"""``mcore-diagnose watch``: follow a running job's logs and report a failure, a stall, a
straggler and the end as soon as the logs show them (docs/watch.md)."""
