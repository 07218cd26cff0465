"""``flush`` that also empties frozen tables on SQLite.

Django's ``flush`` removes every row of every table: on PostgreSQL by ``TRUNCATE``, which row
triggers do not see; on SQLite by ``DELETE FROM``, which the freeze triggers (migrations 0002 and
0012) refuse for a run's rows and a sealed version's questions. Here, on SQLite, the triggers are
lifted inside the flush's own transaction and created again from their stored definitions before it
commits, so a flush (and every transactional test) still empties the database while no other door
can delete frozen rows.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands.flush import Command as DjangoFlush
from django.db import DEFAULT_DB_ALIAS, connections, transaction


class Command(DjangoFlush):
    def handle(self, **options: Any) -> None:
        connection = connections[options.get("database") or DEFAULT_DB_ALIAS]
        if connection.vendor != "sqlite":
            return super().handle(**options)
        with transaction.atomic(using=connection.alias):
            with connection.cursor() as cursor:
                cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'evalcore_%'")
                triggers = cursor.fetchall()
                for name, _ in triggers:
                    cursor.execute(f'DROP TRIGGER "{name}"')
            super().handle(**options)
            with connection.cursor() as cursor:
                for _, sql in triggers:
                    cursor.execute(sql)
        return None
