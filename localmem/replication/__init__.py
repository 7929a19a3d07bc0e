"""Replication: ``localmem sync`` (store to store), ``pull`` (AutoMem to a store) and ``push``
(a store to AutoMem), with their wire formats, paging and per-peer state."""
