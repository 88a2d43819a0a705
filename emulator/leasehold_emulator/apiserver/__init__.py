"""The emulated Kubernetes API server (docs/emulator.md): :mod:`.server` speaks HTTP,
:mod:`.objects` keeps the API's semantics, :mod:`.store` persists, :mod:`.run` is
``leasehold emulator up | down | status``."""
