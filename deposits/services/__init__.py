"""The deposit store's writes; every write in the app goes through one of these modules.

`deposits`: add, correct, bulk add, retract, erase, resolve a bag, record a recall, expire
idempotency keys. `bag_counts`: the per-bag counters and search terms kept in step with every
write. `episodes`: conflict episodes opened and closed as bags enter and leave conflict.
"""
