"""Alembic environment for the Placement schema.

Driven by placement.db.migration, which hands over an open connection
through ``config.attributes['connection']``; there is no alembic.ini.
"""

from alembic import context
from placement.db import tables


def main():
    if context.is_offline_mode():
        # Some steps inspect existing data, so SQL scripts cannot be produced.
        raise RuntimeError('offline (--sql) migrations are not supported')
    connection = context.config.attributes.get('connection')
    if connection is None:
        raise RuntimeError("migrations need config.attributes['connection']; "
                           "use placement.db.migration")
    context.configure(connection=connection, target_metadata=tables.metadata)
    with context.begin_transaction():
        context.run_migrations()


main()
