"""The Kubernetes shell around the core (DESIGN §5): a Kopf operator that reads
Leases and NodePools, drives :class:`leasehold.core.scheduler.Scheduler` in real (or
scaled) time, and enacts its actions as pods, statuses and events."""
