"""placement.db.resource_provider_trait.replace: a generation-checked
replacement of a provider's traits that changes nothing succeeds only if
the generation it was given still holds when it finds nothing to do.
"""
import pytest

from placement import exception
from placement.db import resource_provider as rp_db
from placement.db import resource_provider_trait as rp_trait_db

import sql_rows

GOLD = 'HW_CPU_X86_AVX2'


def test_a_replacement_that_changes_nothing_keeps_the_generation(backend):
    with backend.engine.begin() as conn:
        provider = sql_rows.provider(conn)
        assert rp_trait_db.replace(conn, provider, [GOLD], 0) == 1
    with backend.engine.begin() as conn:
        provider = rp_db.get_by_uuid(conn, provider['uuid'])
        assert rp_trait_db.replace(conn, provider, [GOLD], 1) == 1


def test_a_no_op_on_a_generation_another_writer_moved_on_is_refused(
        backend):
    """The provider row was read at generation 0; another writer then
    added the very trait asked for (generation 1). Finding nothing left
    to change must not answer 'done at generation 0'."""
    with backend.engine.begin() as conn:
        provider = sql_rows.provider(conn)
    stale = dict(provider)
    with backend.engine.begin() as conn:
        assert rp_trait_db.replace(conn, provider, [GOLD], 0) == 1
    with backend.engine.begin() as conn:
        with pytest.raises(exception.ConcurrentUpdate):
            rp_trait_db.replace(conn, stale, [GOLD], 0)
