"""Thin Celery tasks over deposit services."""

from __future__ import annotations

from celery import shared_task

from deposits.services import idempotency_expire


@shared_task(name="deposits.tasks.expire_idempotency_keys")
def expire_idempotency_keys() -> int:
    return idempotency_expire()
